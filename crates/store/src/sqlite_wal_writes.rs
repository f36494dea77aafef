//! A transaction's log frames written to the write-ahead log in one `pwrite`, not two each.
//!
//! SQLite writes every frame of a commit with two writes of its own, the 24-byte header and
//! then the page, so a code exchange (13 dirty pages) made 26 `pwrite` calls, and the kernel
//! handled three page-cache pages per frame (a frame straddles two): 5% of an exchange's CPU
//! on SQLite (docs/performance.md). This VFS is SQLite's own (the platform's default: `unix`)
//! with one change, on the log's file only: writes that follow one another are gathered and
//! handed to SQLite's own write as one, when the commit's last frame is complete.
//!
//! Nothing is reordered or kept past its commit. Only writes that extend the log are
//! gathered; one that writes again what was written (SQLite's checksums rewritten after a
//! commit, a page changed again in its transaction) goes to the file at once, as does every
//! write after a sync until a commit frame is complete (`synchronous = FULL` may sync in
//! the middle of a frame). The gathered bytes go to the file before any other operation on
//! it (a read, a sync, a truncation, its size, a file control, its close), before a write
//! that does not follow them, and at the latest when the page of a commit frame (its
//! header's database size not zero: the frame that ends a transaction) has been appended.
//! SQLite writes the whole frame set before it publishes the commit in the log's shared
//! index, so a reader of another connection, or the checkpoint, finds every frame of a
//! commit in the file, and so does the recovery after a crash: what a crash can lose is
//! what it could lose before, frames of a transaction that has not committed.
//!
//! A write that fails when it is handed on fails its transaction: SQLite was told those
//! frames were written, so the file refuses every later write past them (the commit's among
//! them) and every read of them, as an I/O error (on which SQLite undoes the transaction,
//! not only the statement), until SQLite writes a frame's header there again after the
//! rollback. Every other file (the database, its shared memory, temporary files) is the
//! default VFS's own, untouched.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::OnceLock;

use rusqlite::ffi;

/// The name the store's own connections open their files with (as SQLite keeps it, and as
/// rusqlite takes it).
const VFS_NAME: &CStr = c"fieldauth-wal-writes";
const VFS_NAME_STR: &str = "fieldauth-wal-writes";

/// A log frame's header; a page is at least 512 bytes, so a write of this size is a header.
const FRAME_HEADER: usize = 24;
/// The log's own header, at the start of its file, is written through at once.
const LOG_HEADER: i64 = 32;
/// The most SQLite's unix VFS writes in one call (`seekAndWriteFd` masks the length with
/// 0x1ffff): gathered bytes that would pass it are handed on first, so a transaction of
/// thousands of pages (a migration, the clean-up) goes in writes of up to 31 frames.
const MOST_GATHERED: usize = 0x1ffff;

/// Registers the VFS (once per process) and returns its name, or `None` when SQLite has no
/// default VFS to wrap: the connection then opens with the default.
pub(crate) fn registered() -> Option<&'static str> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    REGISTERED.get_or_init(register).then_some(VFS_NAME_STR)
}

/// The default VFS, which every file is opened with underneath.
struct Inner(*mut ffi::sqlite3_vfs);
// SAFETY: SQLite's VFS objects are process-wide and never freed; its methods are safe to
// call from any thread (SQLite's default build is thread-safe).
#[allow(unsafe_code)]
unsafe impl Send for Inner {}
#[allow(unsafe_code)]
unsafe impl Sync for Inner {}

static INNER: OnceLock<Inner> = OnceLock::new();

#[allow(unsafe_code)]
fn register() -> bool {
    // SAFETY: a null name finds the default VFS; SQLite initializes itself first.
    let inner = unsafe { ffi::sqlite3_vfs_find(std::ptr::null()) };
    if inner.is_null() {
        return false;
    }
    let _ = INNER.set(Inner(inner));
    // SAFETY: `inner` is SQLite's default VFS, alive for the process.
    let mut vfs = unsafe { *inner };
    // The default's methods and settings (its `pAppData` too, which its methods read), but
    // its own name, room for the gathered bytes in front of each log file, and its own open.
    let own = i32::try_from(std::mem::size_of::<LogFile>()).unwrap_or(i32::MAX);
    vfs.szOsFile = vfs.szOsFile.saturating_add(own);
    vfs.zName = VFS_NAME.as_ptr();
    vfs.pNext = std::ptr::null_mut();
    vfs.xOpen = Some(open);
    // SQLite keeps the pointer for the process's life: leaked on purpose, once.
    let vfs = Box::into_raw(Box::new(vfs));
    // SAFETY: `vfs` is a complete VFS that outlives the process's connections.
    let rc = unsafe { ffi::sqlite3_vfs_register(vfs, 0) };
    rc == ffi::SQLITE_OK
}

/// A log file as the VFS hands it to SQLite: its `sqlite3_file` first (SQLite reads only
/// that), then the default VFS's own file, which sits right after this struct.
#[repr(C)]
struct LogFile {
    base: ffi::sqlite3_file,
    inner: *mut ffi::sqlite3_file,
    /// Bytes written but not yet handed on, to go at `start`.
    gathered: Vec<u8>,
    start: i64,
    /// A commit frame's header was written or gathered, and its page not yet.
    commit_pending: bool,
    /// The end of the log as this file's writes extended it (since its header was last
    /// written): a write before it writes again what was written (SQLite's checksums
    /// rewritten after a commit, a page changed again), and goes to the file at once.
    appended_to: i64,
    /// The log was synced in the middle of a transaction's frames (`synchronous = FULL`
    /// syncs before it pads a commit, and a restart syncs the log's header): writes go
    /// to the file at once until a commit frame is complete, so none that follows a
    /// sync waits in memory past its commit.
    through: bool,
    /// Where gathered bytes that could not be written began: SQLite was told they were
    /// written, so until it writes that part of the log again (after the transaction's
    /// rollback) every write past it fails, and so does the commit, and no read is served
    /// from it.
    lost_from: Option<i64>,
}

// The default VFS's file right after `LogFile` must be as aligned as SQLite allocates
// (8 bytes).
const _: () = assert!(std::mem::size_of::<LogFile>().is_multiple_of(8));

#[allow(unsafe_code)]
unsafe extern "C" fn open(
    _vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    let Some(Inner(inner_vfs)) = INNER.get() else {
        return ffi::SQLITE_CANTOPEN;
    };
    let inner_vfs = *inner_vfs;
    // SAFETY: the default VFS always has an open.
    let Some(inner_open) = (unsafe { (*inner_vfs).xOpen }) else {
        return ffi::SQLITE_CANTOPEN;
    };
    if flags & ffi::SQLITE_OPEN_WAL == 0 {
        // Every other file is the default VFS's own, in the space SQLite gave (larger than
        // it needs): SQLite calls its methods directly, with nothing in between.
        // SAFETY: `file` has at least the default VFS's `szOsFile` bytes.
        return unsafe { inner_open(inner_vfs, name, file, flags, out_flags) };
    }
    let log = file.cast::<LogFile>();
    // SAFETY: SQLite gave `szOsFile` bytes: this struct, then the default VFS's file.
    let inner = unsafe { log.add(1) }.cast::<ffi::sqlite3_file>();
    // SAFETY: as above; on failure SQLite does not close a file whose methods are null.
    let rc = unsafe { inner_open(inner_vfs, name, inner, flags, out_flags) };
    if rc != ffi::SQLITE_OK {
        // SAFETY: the first field is ours to write; SQLite reads it to know not to close.
        unsafe { (*file).pMethods = std::ptr::null() };
        return rc;
    }
    // SAFETY: `log` is SQLite's allocation of at least this struct's size, not yet
    // initialized; the struct is dropped in `close`.
    unsafe {
        log.write(LogFile {
            base: ffi::sqlite3_file {
                pMethods: &raw const LOG_METHODS,
            },
            inner,
            gathered: Vec::new(),
            start: 0,
            commit_pending: false,
            appended_to: 0,
            through: false,
            lost_from: None,
        });
    }
    ffi::SQLITE_OK
}

static LOG_METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 3,
    xClose: Some(close),
    xRead: Some(read),
    xWrite: Some(write),
    xTruncate: Some(truncate),
    xSync: Some(sync),
    xFileSize: Some(file_size),
    xLock: Some(lock),
    xUnlock: Some(unlock),
    xCheckReservedLock: Some(check_reserved_lock),
    xFileControl: Some(file_control),
    xSectorSize: Some(sector_size),
    xDeviceCharacteristics: Some(device_characteristics),
    xShmMap: Some(shm_map),
    xShmLock: Some(shm_lock),
    xShmBarrier: Some(shm_barrier),
    xShmUnmap: Some(shm_unmap),
    xFetch: Some(fetch),
    xUnfetch: Some(unfetch),
};

impl LogFile {
    /// The default VFS's methods for the file underneath.
    #[allow(unsafe_code)]
    fn methods(&self) -> &ffi::sqlite3_io_methods {
        // SAFETY: `inner` was opened successfully in `open` and stays open until `close`;
        // its methods are the default VFS's static table.
        unsafe { &*(*self.inner).pMethods }
    }

    /// The default VFS's write of `bytes` at `offset`, which copies them.
    #[allow(unsafe_code)]
    fn write_underneath(&self, bytes: &[u8], offset: i64) -> c_int {
        let Some(write) = self.methods().xWrite else {
            return ffi::SQLITE_IOERR_WRITE;
        };
        let Ok(amount) = c_int::try_from(bytes.len()) else {
            return ffi::SQLITE_IOERR_WRITE;
        };
        // SAFETY: `bytes` holds `amount` bytes; the file underneath is open.
        unsafe { write(self.inner, bytes.as_ptr().cast(), amount, offset) }
    }

    /// Hands the gathered bytes to the default VFS's write, as one. Whatever it returns,
    /// they are dropped: an error fails the transaction that wrote them (`lost_from`).
    fn hand_on(&mut self) -> c_int {
        if self.gathered.is_empty() {
            return ffi::SQLITE_OK;
        }
        let rc = self.write_underneath(&self.gathered, self.start);
        if rc != ffi::SQLITE_OK {
            let from = self
                .lost_from
                .map_or(self.start, |from| from.min(self.start));
            self.lost_from = Some(from);
        }
        self.gathered.clear();
        rc
    }

    /// Whether a write may go on: not into or past bytes that were lost. A frame's header
    /// (or the log's) at or before them is SQLite writing the log again from there, after
    /// the rollback: the loss is over. A page written again before them is not.
    fn may_write(&mut self, offset: i64, length: usize) -> bool {
        let Some(from) = self.lost_from else {
            return true;
        };
        if offset <= from && (length == FRAME_HEADER || offset < LOG_HEADER) {
            self.lost_from = None;
            return true;
        }
        offset.saturating_add(length as i64) <= from
    }

    /// Whether `bytes`, a write that extends the log, completes a commit frame (its page,
    /// after a header whose database size is not zero).
    fn completes_commit(&mut self, bytes: &[u8]) -> bool {
        if bytes.len() == FRAME_HEADER {
            self.commit_pending = bytes[4..8] != [0; 4];
            return false;
        }
        std::mem::take(&mut self.commit_pending)
    }

    /// A write straight to the file underneath, after what was gathered.
    fn write_through(&mut self, bytes: &[u8], offset: i64) -> c_int {
        match self.hand_on() {
            ffi::SQLITE_OK => self.write_underneath(bytes, offset),
            rc => rc,
        }
    }

    fn write(&mut self, bytes: &[u8], offset: i64) -> c_int {
        if !self.may_write(offset, bytes.len()) {
            return ffi::SQLITE_IOERR_WRITE;
        }
        let end = offset.saturating_add(bytes.len() as i64);
        if offset < LOG_HEADER {
            // The log's header, at its restart: SQLite syncs it before any frame follows.
            self.appended_to = end;
            self.commit_pending = false;
            return self.write_through(bytes, offset);
        }
        if offset < self.appended_to {
            return self.write_through(bytes, offset);
        }
        self.appended_to = end;
        let completes = self.completes_commit(bytes);
        if self.through {
            self.through = !completes;
            return self.write_through(bytes, offset);
        }
        let gathered_end = self.start + self.gathered.len() as i64;
        let room = MOST_GATHERED - self.gathered.len();
        if !self.gathered.is_empty() && (offset != gathered_end || bytes.len() > room) {
            let rc = self.hand_on();
            if rc != ffi::SQLITE_OK {
                return rc;
            }
        }
        if self.gathered.is_empty() {
            self.start = offset;
        }
        self.gathered.extend_from_slice(bytes);
        if completes {
            // SQLite publishes the commit next, in the log's shared index.
            return self.hand_on();
        }
        ffi::SQLITE_OK
    }
}

/// Runs `method` on the log file behind SQLite's pointer once what was gathered is handed
/// on. A failure to hand on is `failed`, an I/O error of the method: not `SQLITE_FULL`, on
/// which SQLite may undo only the statement and go on with a transaction whose frames were
/// lost.
#[allow(unsafe_code)]
unsafe fn handed_on(
    file: *mut ffi::sqlite3_file,
    failed: c_int,
    method: impl FnOnce(&mut LogFile) -> c_int,
) -> c_int {
    // SAFETY: SQLite calls these methods only with files `open` initialized as a `LogFile`,
    // one call at a time per file.
    let log = unsafe { &mut *file.cast::<LogFile>() };
    match log.hand_on() {
        ffi::SQLITE_OK => method(log),
        _ => failed,
    }
}

/// The log file behind SQLite's pointer, for a method that does not touch its bytes.
#[allow(unsafe_code)]
unsafe fn log_file<'a>(file: *mut ffi::sqlite3_file) -> &'a mut LogFile {
    // SAFETY: as in `handed_on`.
    unsafe { &mut *file.cast::<LogFile>() }
}

#[allow(unsafe_code)]
unsafe extern "C" fn close(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: initialized in `open`; SQLite closes a file once and never uses it after, so
    // the struct is moved out here and dropped at the end (SQLite frees its memory).
    let mut log = unsafe { file.cast::<LogFile>().read() };
    let handed = log.hand_on();
    let closed = match log.methods().xClose {
        // SAFETY: the inner file is open; closing it is its last use.
        Some(close) => unsafe { close(log.inner) },
        None => ffi::SQLITE_OK,
    };
    if handed != ffi::SQLITE_OK {
        handed
    } else {
        closed
    }
}

#[allow(unsafe_code)]
unsafe extern "C" fn read(
    file: *mut ffi::sqlite3_file,
    bytes: *mut c_void,
    amount: c_int,
    offset: ffi::sqlite3_int64,
) -> c_int {
    let method = |log: &mut LogFile| {
        let end = offset.saturating_add(i64::from(amount));
        match log.methods().xRead {
            _ if log.lost_from.is_some_and(|from| end > from) => ffi::SQLITE_IOERR_READ,
            // SAFETY: SQLite's own arguments, for the file underneath.
            Some(read) => unsafe { read(log.inner, bytes, amount, offset) },
            None => ffi::SQLITE_IOERR_READ,
        }
    };
    // SAFETY: see `handed_on`.
    unsafe { handed_on(file, ffi::SQLITE_IOERR_READ, method) }
}

#[allow(unsafe_code)]
unsafe extern "C" fn write(
    file: *mut ffi::sqlite3_file,
    bytes: *const c_void,
    amount: c_int,
    offset: ffi::sqlite3_int64,
) -> c_int {
    // SAFETY: see `log_file`.
    let log = unsafe { log_file(file) };
    let Ok(length) = usize::try_from(amount) else {
        return ffi::SQLITE_IOERR_WRITE;
    };
    // SAFETY: SQLite passes `amount` readable bytes at `bytes`.
    let bytes = unsafe { std::slice::from_raw_parts(bytes.cast::<u8>(), length) };
    log.write(bytes, offset)
}

#[allow(unsafe_code)]
unsafe extern "C" fn sync(file: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    let method = |log: &mut LogFile| {
        log.through = true;
        match log.methods().xSync {
            // SAFETY: SQLite's own arguments, for the file underneath.
            Some(sync) => unsafe { sync(log.inner, flags) },
            None => ffi::SQLITE_IOERR_FSYNC,
        }
    };
    // SAFETY: see `handed_on`.
    unsafe { handed_on(file, ffi::SQLITE_IOERR_FSYNC, method) }
}

#[allow(unsafe_code)]
unsafe extern "C" fn truncate(file: *mut ffi::sqlite3_file, size: ffi::sqlite3_int64) -> c_int {
    let method = |log: &mut LogFile| {
        log.appended_to = log.appended_to.min(size);
        match log.methods().xTruncate {
            // SAFETY: SQLite's own arguments, for the file underneath.
            Some(truncate) => unsafe { truncate(log.inner, size) },
            None => ffi::SQLITE_IOERR_TRUNCATE,
        }
    };
    // SAFETY: see `handed_on`.
    unsafe { handed_on(file, ffi::SQLITE_IOERR_TRUNCATE, method) }
}

/// The methods below hand what was gathered on first, then call the default VFS's own.
macro_rules! handed_on_then {
    ($name:ident, $method:ident, ($($arg:ident: $ty:ty),*), $failed:expr, $missing:expr) => {
        #[allow(unsafe_code)]
        unsafe extern "C" fn $name(file: *mut ffi::sqlite3_file, $($arg: $ty),*) -> c_int {
            let method = |log: &mut LogFile| match log.methods().$method {
                // SAFETY: SQLite's own arguments, for the file underneath.
                Some(method) => unsafe { method(log.inner, $($arg),*) },
                None => $missing,
            };
            // SAFETY: see `handed_on`.
            unsafe { handed_on(file, $failed, method) }
        }
    };
}

/// The methods below leave what was gathered alone: none of them reads or writes the
/// file's bytes (the log has no locks or shared memory of its own; they pass through).
macro_rules! passed_through {
    ($name:ident, $method:ident, ($($arg:ident: $ty:ty),*), $missing:expr) => {
        #[allow(unsafe_code)]
        unsafe extern "C" fn $name(file: *mut ffi::sqlite3_file, $($arg: $ty),*) -> c_int {
            // SAFETY: see `log_file`.
            let log = unsafe { log_file(file) };
            match log.methods().$method {
                // SAFETY: SQLite's own arguments, for the file underneath.
                Some(method) => unsafe { method(log.inner, $($arg),*) },
                None => $missing,
            }
        }
    };
}

handed_on_then!(file_size, xFileSize, (size: *mut ffi::sqlite3_int64), ffi::SQLITE_IOERR_FSTAT, ffi::SQLITE_IOERR_FSTAT);
handed_on_then!(file_control, xFileControl, (op: c_int, argument: *mut c_void), ffi::SQLITE_IOERR, ffi::SQLITE_NOTFOUND);
handed_on_then!(fetch, xFetch, (offset: ffi::sqlite3_int64, amount: c_int, page: *mut *mut c_void), ffi::SQLITE_IOERR_READ, {
    // SAFETY: SQLite passes a slot for the page; none means "read it instead".
    unsafe { *page = std::ptr::null_mut() };
    ffi::SQLITE_OK
});
passed_through!(lock, xLock, (level: c_int), ffi::SQLITE_OK);
passed_through!(unlock, xUnlock, (level: c_int), ffi::SQLITE_OK);
passed_through!(check_reserved_lock, xCheckReservedLock, (reserved: *mut c_int), ffi::SQLITE_OK);
passed_through!(sector_size, xSectorSize, (), 4096);
passed_through!(device_characteristics, xDeviceCharacteristics, (), 0);
passed_through!(shm_map, xShmMap, (region: c_int, size: c_int, extend: c_int, memory: *mut *mut c_void), ffi::SQLITE_IOERR_SHMMAP);
passed_through!(shm_lock, xShmLock, (offset: c_int, count: c_int, flags: c_int), ffi::SQLITE_IOERR_SHMLOCK);
passed_through!(unfetch, xUnfetch, (offset: ffi::sqlite3_int64, page: *mut c_void), ffi::SQLITE_OK);
passed_through!(shm_unmap, xShmUnmap, (delete: c_int), ffi::SQLITE_OK);

#[allow(unsafe_code)]
unsafe extern "C" fn shm_barrier(file: *mut ffi::sqlite3_file) {
    // SAFETY: see `log_file`.
    let log = unsafe { log_file(file) };
    if let Some(barrier) = log.methods().xShmBarrier {
        // SAFETY: the file underneath, open.
        unsafe { barrier(log.inner) };
    }
}

#[cfg(test)]
#[allow(unsafe_code)]
mod tests {
    use super::*;
    use rusqlite::{Connection, OpenFlags};
    use std::path::Path;

    fn ours(path: &Path) -> Connection {
        let vfs = registered().expect("the VFS registers");
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE;
        let conn = Connection::open_with_flags_and_vfs(path, flags, vfs).unwrap();
        // As the store's connections: the log checkpointed by another, never by the writer.
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
             PRAGMA wal_autocheckpoint = 0;",
        )
        .unwrap();
        conn
    }

    fn schema(conn: &Connection) {
        conn.execute_batch(
            "CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT, b TEXT, c TEXT, d BLOB);
             CREATE INDEX t_a ON t (a); CREATE INDEX t_b ON t (b); CREATE INDEX t_c ON t (c);",
        )
        .unwrap();
    }

    /// Write system calls this thread made so far (`syscw`, Linux).
    fn writes_of_this_thread() -> Option<u64> {
        let io = std::fs::read_to_string("/proc/thread-self/io").ok()?;
        io.lines()
            .find_map(|line| line.strip_prefix("syscw: "))
            .and_then(|n| n.trim().parse().ok())
    }

    fn insert(conn: &Connection, n: u64) {
        let key = format!("{:016x}", n.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        conn.execute(
            "INSERT INTO t (a, b, c, d) VALUES (?1, ?2, ?3, zeroblob(300))",
            (&key, key.chars().rev().collect::<String>(), n.to_string()),
        )
        .unwrap();
    }

    #[test]
    fn a_commit_of_many_pages_is_one_write() {
        let Some(_) = writes_of_this_thread() else {
            eprintln!("SKIPPED: no /proc/thread-self/io to count writes with");
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let conn = ours(&dir.path().join("one-write.db"));
        schema(&conn);
        for n in 0..2_000 {
            insert(&conn, n);
        }
        // Four random keys in three indexes and the table: pages all over the file.
        let log = dir.path().join("one-write.db-wal");
        let log_size = || std::fs::metadata(&log).unwrap().len();
        let (size, before) = (log_size(), writes_of_this_thread().unwrap());
        let tx = conn.unchecked_transaction().unwrap();
        for n in 10_000..10_004 {
            insert(&conn, n);
        }
        tx.commit().unwrap();
        let writes = writes_of_this_thread().unwrap() - before;
        let frames = (log_size() - size) / (24 + 4096);
        assert!(frames >= 8, "the commit wrote {frames} frames");
        assert_eq!(writes, 1, "{frames} frames in {writes} writes");
    }

    /// A file underneath that keeps its bytes in memory and fails writes on demand: to see
    /// what becomes of gathered bytes that cannot be written.
    #[repr(C)]
    struct Memory {
        base: ffi::sqlite3_file,
        bytes: Vec<u8>,
        writes: usize,
        failing: bool,
    }

    unsafe extern "C" fn memory_write(
        file: *mut ffi::sqlite3_file,
        bytes: *const c_void,
        amount: c_int,
        offset: ffi::sqlite3_int64,
    ) -> c_int {
        let memory = unsafe { &mut *file.cast::<Memory>() };
        if memory.failing {
            return ffi::SQLITE_FULL;
        }
        let (at, amount) = (offset as usize, amount as usize);
        let bytes = unsafe { std::slice::from_raw_parts(bytes.cast::<u8>(), amount) };
        if memory.bytes.len() < at + amount {
            memory.bytes.resize(at + amount, 0);
        }
        memory.bytes[at..at + amount].copy_from_slice(bytes);
        memory.writes += 1;
        ffi::SQLITE_OK
    }

    unsafe extern "C" fn memory_read(
        file: *mut ffi::sqlite3_file,
        bytes: *mut c_void,
        amount: c_int,
        offset: ffi::sqlite3_int64,
    ) -> c_int {
        let memory = unsafe { &*file.cast::<Memory>() };
        let (at, amount) = (offset as usize, amount as usize);
        let out = unsafe { std::slice::from_raw_parts_mut(bytes.cast::<u8>(), amount) };
        out.fill(0);
        let available = memory.bytes.len().saturating_sub(at).min(amount);
        out[..available].copy_from_slice(&memory.bytes[at..at + available]);
        ffi::SQLITE_OK
    }

    unsafe extern "C" fn memory_sync(_file: *mut ffi::sqlite3_file, _flags: c_int) -> c_int {
        ffi::SQLITE_OK
    }

    const MEMORY_METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
        iVersion: 1,
        xClose: None,
        xRead: Some(memory_read),
        xWrite: Some(memory_write),
        xTruncate: None,
        xSync: Some(memory_sync),
        xFileSize: None,
        xLock: None,
        xUnlock: None,
        xCheckReservedLock: None,
        xFileControl: None,
        xSectorSize: None,
        xDeviceCharacteristics: None,
        xShmMap: None,
        xShmLock: None,
        xShmBarrier: None,
        xShmUnmap: None,
        xFetch: None,
        xUnfetch: None,
    };
    static MEMORY: ffi::sqlite3_io_methods = MEMORY_METHODS;

    /// A log file over `memory`, as `open` makes one.
    fn log_over(memory: &mut Memory) -> LogFile {
        LogFile {
            base: ffi::sqlite3_file {
                pMethods: &raw const LOG_METHODS,
            },
            inner: (memory as *mut Memory).cast(),
            gathered: Vec::new(),
            start: 0,
            commit_pending: false,
            appended_to: 0,
            through: false,
            lost_from: None,
        }
    }

    /// A frame: its header (`commit` its database size, 0 if not a commit) and its page.
    fn frame(log: &mut LogFile, number: i64, commit: u32, fill: u8) -> (c_int, c_int) {
        let file = (log as *mut LogFile).cast::<ffi::sqlite3_file>();
        let at = LOG_HEADER + number * (24 + 512);
        let mut header = [0u8; 24];
        header[4..8].copy_from_slice(&commit.to_be_bytes());
        let page = [fill; 512];
        unsafe {
            (
                write(file, header.as_ptr().cast(), 24, at),
                write(file, page.as_ptr().cast(), 512, at + 24),
            )
        }
    }

    fn read_at(log: &mut LogFile, offset: i64) -> (c_int, u8) {
        let file = (log as *mut LogFile).cast::<ffi::sqlite3_file>();
        let mut byte = [0u8; 1];
        let rc = unsafe { read(file, byte.as_mut_ptr().cast(), 1, offset) };
        (rc, byte[0])
    }

    fn memory() -> Memory {
        Memory {
            base: ffi::sqlite3_file {
                pMethods: &raw const MEMORY,
            },
            bytes: Vec::new(),
            writes: 0,
            failing: false,
        }
    }

    #[test]
    fn frames_go_to_the_file_in_one_write_when_their_commit_is_complete() {
        let mut memory = memory();
        let mut log = log_over(&mut memory);
        for n in 0..3 {
            assert_eq!(frame(&mut log, n, 0, 1), (ffi::SQLITE_OK, ffi::SQLITE_OK));
        }
        assert_eq!(memory.writes, 0, "nothing before the commit frame");
        assert_eq!(frame(&mut log, 3, 7, 2), (ffi::SQLITE_OK, ffi::SQLITE_OK));
        assert_eq!(memory.writes, 1, "four frames in one write");
        assert_eq!(memory.bytes.len() as i64, LOG_HEADER + 4 * 536);
        // A read hands on what was gathered before it reads.
        assert_eq!(frame(&mut log, 4, 0, 9), (ffi::SQLITE_OK, ffi::SQLITE_OK));
        assert_eq!(
            read_at(&mut log, LOG_HEADER + 4 * 536 + 24),
            (ffi::SQLITE_OK, 9)
        );
        assert_eq!(memory.writes, 2);
    }

    #[test]
    fn frames_that_could_not_be_written_fail_the_commit_until_written_again() {
        let mut memory = memory();
        let mut log = log_over(&mut memory);
        let second = LOG_HEADER + 536;
        assert_eq!(frame(&mut log, 0, 3, 1), (ffi::SQLITE_OK, ffi::SQLITE_OK));
        assert_eq!(frame(&mut log, 1, 0, 2), (ffi::SQLITE_OK, ffi::SQLITE_OK));
        memory.failing = true;
        // The read that hands the spilled frame on learns that it was lost (an I/O error,
        // so that SQLite undoes the whole transaction), and so does every later read of it
        // and write past it: the commit cannot succeed.
        assert_eq!(read_at(&mut log, second + 24).0, ffi::SQLITE_IOERR_READ);
        memory.failing = false;
        assert_eq!(read_at(&mut log, second + 24).0, ffi::SQLITE_IOERR_READ);
        assert_eq!(frame(&mut log, 2, 5, 3).0, ffi::SQLITE_IOERR_WRITE);
        // A page written again before the lost frame goes to the file, and the loss stands.
        let page = [9u8; 512];
        let file = (&raw mut log).cast::<ffi::sqlite3_file>();
        let again = unsafe { write(file, page.as_ptr().cast(), 512, LOG_HEADER + 24) };
        assert_eq!(again, ffi::SQLITE_OK);
        assert_eq!(read_at(&mut log, LOG_HEADER + 24), (ffi::SQLITE_OK, 9));
        assert_eq!(frame(&mut log, 2, 5, 3).0, ffi::SQLITE_IOERR_WRITE);
        // After the rollback SQLite writes the log again from the lost frame on.
        assert_eq!(frame(&mut log, 1, 0, 4), (ffi::SQLITE_OK, ffi::SQLITE_OK));
        assert_eq!(frame(&mut log, 2, 5, 5), (ffi::SQLITE_OK, ffi::SQLITE_OK));
        assert_eq!(read_at(&mut log, second + 24), (ffi::SQLITE_OK, 4));
        assert_eq!(read_at(&mut log, second + 536 + 24), (ffi::SQLITE_OK, 5));
    }

    /// `synchronous = FULL` without power-safe overwrites pads a commit with copies of its
    /// last frame and syncs at a sector's boundary, inside a frame: what follows the sync
    /// goes to the file at once, since SQLite publishes the commit without another call.
    #[test]
    fn writes_after_a_sync_within_a_commit_go_to_the_file_at_once() {
        let mut memory = memory();
        let mut log = log_over(&mut memory);
        assert_eq!(frame(&mut log, 0, 1, 1), (ffi::SQLITE_OK, ffi::SQLITE_OK));
        let file = (&raw mut log).cast::<ffi::sqlite3_file>();
        let padding = LOG_HEADER + 536;
        let mut header = [0u8; 24];
        header[4..8].copy_from_slice(&1u32.to_be_bytes());
        let page = [6u8; 512];
        unsafe {
            assert_eq!(
                write(file, header.as_ptr().cast(), 24, padding),
                ffi::SQLITE_OK
            );
            assert_eq!(
                write(file, page.as_ptr().cast(), 200, padding + 24),
                ffi::SQLITE_OK
            );
            assert_eq!(sync(file, ffi::SQLITE_SYNC_NORMAL), ffi::SQLITE_OK);
            let rest = page[200..].as_ptr().cast();
            assert_eq!(write(file, rest, 312, padding + 224), ffi::SQLITE_OK);
        }
        assert_eq!(
            memory.bytes.len() as i64,
            padding + 536,
            "the frame's end is in the file"
        );
        assert_eq!(memory.bytes.last(), Some(&6));
    }

    /// A crash right after a commit: the files as they are on disk, without the process,
    /// must hold it, through a commit that rewrote frames it had spilled (whose headers
    /// SQLite writes again, checksums and all, after the commit frame).
    #[test]
    fn a_commit_is_whole_in_the_files_when_it_returns() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("crash.db");
        let conn = ours(&path);
        conn.execute_batch("PRAGMA cache_size = 10;").unwrap();
        schema(&conn);
        for round in 0..5u64 {
            let tx = conn.unchecked_transaction().unwrap();
            for n in 0..300 {
                insert(&conn, round * 1_000 + n);
            }
            // The first rows' pages, spilled by now, changed again before the commit.
            conn.execute("UPDATE t SET b = b || 'y' WHERE id <= 5", [])
                .unwrap();
            tx.commit().unwrap();
            let image = dir.path().join(format!("image-{round}"));
            std::fs::create_dir(&image).unwrap();
            for suffix in ["", "-wal"] {
                let name = format!("crash.db{suffix}");
                std::fs::copy(dir.path().join(&name), image.join(&name)).unwrap();
            }
            let recovered = Connection::open(image.join("crash.db")).unwrap();
            let rows: u64 = recovered
                .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
                .unwrap();
            assert_eq!(rows, (round + 1) * 300, "after round {round}");
            let check: String = recovered
                .query_row("PRAGMA integrity_check", [], |r| r.get(0))
                .unwrap();
            assert_eq!(check, "ok");
        }
    }

    /// What the store relies on: a commit is whole in the file when it returns, for the
    /// checkpoint's connection (SQLite's default VFS, another thread) and for readers,
    /// through transactions larger than the page cache (frames written before the commit,
    /// some written again), the log's restarts and a connection closed and opened again.
    #[test]
    fn every_commit_is_in_the_file_for_other_connections() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shared.db");
        let writer = ours(&path);
        // A page cache of 20 pages: a transaction of hundreds of rows spills into the log.
        writer.execute_batch("PRAGMA cache_size = 20;").unwrap();
        schema(&writer);
        let checkpointer = {
            let path = path.clone();
            let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let stopped = std::sync::Arc::clone(&stop);
            let thread = std::thread::spawn(move || {
                let conn = Connection::open(&path).unwrap();
                conn.busy_timeout(std::time::Duration::from_millis(50))
                    .unwrap();
                let mut restarts = 0;
                for pass in 0u64.. {
                    if stopped.load(std::sync::atomic::Ordering::Acquire) {
                        break;
                    }
                    let mode = if pass % 4 == 3 { "RESTART" } else { "PASSIVE" };
                    let busy: i64 = conn
                        .query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |r| r.get(0))
                        .unwrap();
                    restarts += u64::from(mode == "RESTART" && busy == 0);
                    std::thread::sleep(std::time::Duration::from_micros(300));
                }
                restarts
            });
            (stop, thread)
        };
        let reader = Connection::open(&path).unwrap();
        let mut writer = Some(writer);
        let (mut rows, mut sum) = (0u64, 0u64);
        for round in 0..300u64 {
            if round % 100 == 99 {
                // Closed with nothing gathered left behind, and opened again.
                drop(writer.take());
                writer = Some(ours(&path));
            }
            let conn = writer.as_ref().unwrap();
            let many = if round % 10 == 0 { 400 } else { 1 + round % 7 };
            let tx = conn.unchecked_transaction().unwrap();
            for n in 0..many {
                let id = round * 1_000 + n;
                insert(conn, id);
                (rows, sum) = (rows + 1, sum + id);
            }
            if round % 5 == 0 {
                // Pages already in the log written again in the same transaction.
                conn.execute("UPDATE t SET c = c || 'x' WHERE id % 3 = 0", [])
                    .unwrap();
            }
            tx.commit().unwrap();
            let seen: (u64, u64) = reader
                .query_row(
                    "SELECT count(*), coalesce(sum(CAST(c AS INTEGER)), 0) FROM t",
                    [],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .unwrap();
            assert_eq!(seen, (rows, sum), "after round {round}");
        }
        let (stop, thread) = checkpointer;
        stop.store(true, std::sync::atomic::Ordering::Release);
        assert!(
            thread.join().unwrap() > 0,
            "the log restarted at least once"
        );
        for conn in [writer.as_ref().unwrap(), &reader] {
            let check: String = conn
                .query_row("PRAGMA integrity_check", [], |r| r.get(0))
                .unwrap();
            assert_eq!(check, "ok");
        }
    }
}
