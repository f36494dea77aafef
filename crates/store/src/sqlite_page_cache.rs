//! SQLite's own page cache, with one waste taken out: a commit that scans the whole cache
//! for pages past the end of the database when there are none.
//!
//! When a write splits a b-tree page, SQLite (`balance_nonroot`) swaps new pages' numbers
//! through a page number no database uses (the lock-byte page's, 262,145 with 4 KiB
//! pages). Its page cache (`pcache1`) then remembers 262,145 as the largest page number it
//! has held, and every transaction's end asks it to drop the pages past the database's
//! size: with a largest number that far past the end, it visits every slot and every page
//! of its hash table, not the few past the end. Under a stream of writes that is nearly
//! every commit: about 50 µs a commit with the default 2 MiB cache on the bench's host
//! (0.5% of a code exchange's CPU), and three times that with a cache four times larger,
//! which is why a larger cache never made writes faster (docs/performance.md).
//!
//! This cache is SQLite's default, configured in front of it before SQLite initializes,
//! every method handed on unchanged except the truncation: each cache keeps the largest page
//! number it has held, the swap's temporary number left out, and a truncation that starts
//! past it is not handed on, since there is nothing there to drop. The temporary number is
//! never a page of the database (SQLite skips the lock-byte page) and a page holds it only
//! within one split, so leaving it out never keeps a page that a truncation should drop.
//!
//! SQLite takes a page cache only before it initializes, and `sqlite3_config` must not run
//! while another thread uses SQLite: the server's `main` calls [`install`] first thing, on
//! its only thread, beside SQLite's allocator. Without it (a process that did not, such as
//! the other tests' binaries) SQLite's own cache works as before, only slower.

use std::ffi::{c_int, c_uint, c_void};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use rusqlite::ffi;

/// SQLite's `PENDING_BYTE`: the page that holds it is the lock-byte page, never a
/// database page, and the number `balance_nonroot` swaps pages through.
const PENDING_BYTE: u32 = 0x4000_0000;

/// SQLite's default page cache, which every method hands on to.
struct Default(ffi::sqlite3_pcache_methods2);
// SAFETY: SQLite's page cache methods are process-wide functions (its `pArg` is null for
// the default); each cache they create is used by one connection at a time.
#[allow(unsafe_code)]
unsafe impl Send for Default {}
#[allow(unsafe_code)]
unsafe impl Sync for Default {}

static DEFAULT: OnceLock<Default> = OnceLock::new();

/// Truncations handed on to the default cache, and those left out with nothing to drop,
/// since the process started: what the tests watch.
static HANDED_ON: AtomicU64 = AtomicU64::new(0);
static LEFT_OUT: AtomicU64 = AtomicU64::new(0);

/// How many truncations the caches handed on to SQLite's, and how many they left out.
#[cfg(any(test, feature = "testing"))]
pub fn truncations() -> (u64, u64) {
    (
        HANDED_ON.load(Ordering::Relaxed),
        LEFT_OUT.load(Ordering::Relaxed),
    )
}

/// Puts this cache in front of SQLite's default, once per process, if SQLite has not
/// initialized yet; whether it is in place. Call it before anything uses SQLite, while no
/// other thread can (`sqlite3_config` is not thread-safe).
pub fn install() -> bool {
    static INSTALLED: OnceLock<bool> = OnceLock::new();
    *INSTALLED.get_or_init(configure)
}

#[allow(unsafe_code)]
fn configure() -> bool {
    let mut default = std::mem::MaybeUninit::<ffi::sqlite3_pcache_methods2>::zeroed();
    // SAFETY: GETPCACHE2 fills the struct it is given with the default's methods (setting
    // them first if none was configured); once SQLite has initialized, it refuses.
    let rc = unsafe { ffi::sqlite3_config(ffi::SQLITE_CONFIG_GETPCACHE2, default.as_mut_ptr()) };
    if rc != ffi::SQLITE_OK {
        return false;
    }
    // SAFETY: filled above.
    let default = unsafe { default.assume_init() };
    if default.xCreate.is_none() {
        return false;
    }
    if DEFAULT.set(Default(default)).is_err() {
        return false;
    }
    let methods = ffi::sqlite3_pcache_methods2 {
        iVersion: 1,
        pArg: std::ptr::null_mut(),
        xInit: Some(init),
        xShutdown: Some(shutdown),
        xCreate: Some(create),
        xCachesize: Some(cachesize),
        xPagecount: Some(pagecount),
        xFetch: Some(fetch),
        xUnpin: Some(unpin),
        xRekey: Some(rekey),
        xTruncate: Some(truncate),
        xDestroy: Some(destroy),
        xShrink: Some(shrink),
    };
    // SAFETY: SQLite copies the methods; it refuses (SQLITE_MISUSE) once initialized.
    let rc = unsafe { ffi::sqlite3_config(ffi::SQLITE_CONFIG_PCACHE2, &methods) };
    rc == ffi::SQLITE_OK
}

/// One connection's cache: the default's, and the largest page number it has held since
/// its last truncation (an upper bound: counted on every fetch, found or not).
struct Cache {
    inner: *mut ffi::sqlite3_pcache,
    largest: c_uint,
    /// The number `balance_nonroot` swaps pages through, for this cache's page size.
    swap: c_uint,
}

/// The default's methods; set before SQLite can call any method below (`configure`), so
/// never `None` when they run.
fn default() -> Option<&'static ffi::sqlite3_pcache_methods2> {
    DEFAULT.get().map(|d| &d.0)
}

/// # Safety
/// `p` is a cache [`create`] returned and [`destroy`] has not freed.
#[allow(unsafe_code)]
unsafe fn cache<'a>(p: *mut ffi::sqlite3_pcache) -> &'a mut Cache {
    // SAFETY: by the caller's contract; SQLite uses a cache from one thread at a time.
    unsafe { &mut *p.cast::<Cache>() }
}

#[allow(unsafe_code)]
unsafe extern "C" fn init(_arg: *mut c_void) -> c_int {
    let Some(d) = default() else {
        return ffi::SQLITE_ERROR;
    };
    // SAFETY: the default's own initialization, with its own argument.
    d.xInit.map_or(ffi::SQLITE_OK, |f| unsafe { f(d.pArg) })
}

#[allow(unsafe_code)]
unsafe extern "C" fn shutdown(_arg: *mut c_void) {
    if let Some((d, f)) = default().and_then(|d| Some((d, d.xShutdown?))) {
        // SAFETY: the default's own shutdown, with its own argument.
        unsafe { f(d.pArg) }
    }
}

#[allow(unsafe_code)]
unsafe extern "C" fn create(
    sz_page: c_int,
    sz_extra: c_int,
    purgeable: c_int,
) -> *mut ffi::sqlite3_pcache {
    let Some(f) = default().and_then(|d| d.xCreate) else {
        return std::ptr::null_mut();
    };
    // SAFETY: the default's own constructor, with SQLite's arguments.
    let inner = unsafe { f(sz_page, sz_extra, purgeable) };
    if inner.is_null() {
        return inner;
    }
    let swap = u32::try_from(sz_page)
        .ok()
        .filter(|&size| size > 0)
        .map_or(c_uint::MAX, |size| PENDING_BYTE / size + 1);
    let cache = Box::new(Cache {
        inner,
        largest: 0,
        swap,
    });
    Box::into_raw(cache).cast()
}

#[allow(unsafe_code)]
unsafe extern "C" fn cachesize(p: *mut ffi::sqlite3_pcache, n: c_int) {
    // SAFETY: SQLite passes a cache `create` made.
    let cache = unsafe { cache(p) };
    if let Some(f) = default().and_then(|d| d.xCachesize) {
        // SAFETY: the default's own method on its own cache.
        unsafe { f(cache.inner, n) }
    }
}

#[allow(unsafe_code)]
unsafe extern "C" fn pagecount(p: *mut ffi::sqlite3_pcache) -> c_int {
    // SAFETY: SQLite passes a cache `create` made.
    let cache = unsafe { cache(p) };
    // SAFETY: the default's own method on its own cache.
    default()
        .and_then(|d| d.xPagecount)
        .map_or(0, |f| unsafe { f(cache.inner) })
}

#[allow(unsafe_code)]
unsafe extern "C" fn fetch(
    p: *mut ffi::sqlite3_pcache,
    key: c_uint,
    create: c_int,
) -> *mut ffi::sqlite3_pcache_page {
    // SAFETY: SQLite passes a cache `create` made.
    let cache = unsafe { cache(p) };
    if key != cache.swap {
        cache.largest = cache.largest.max(key);
    }
    // SAFETY: the default's own method on its own cache.
    default()
        .and_then(|d| d.xFetch)
        .map_or(std::ptr::null_mut(), |f| unsafe {
            f(cache.inner, key, create)
        })
}

#[allow(unsafe_code)]
unsafe extern "C" fn unpin(
    p: *mut ffi::sqlite3_pcache,
    page: *mut ffi::sqlite3_pcache_page,
    discard: c_int,
) {
    // SAFETY: SQLite passes a cache `create` made.
    let cache = unsafe { cache(p) };
    if let Some(f) = default().and_then(|d| d.xUnpin) {
        // SAFETY: the default's own method on its own cache and page.
        unsafe { f(cache.inner, page, discard) }
    }
}

#[allow(unsafe_code)]
unsafe extern "C" fn rekey(
    p: *mut ffi::sqlite3_pcache,
    page: *mut ffi::sqlite3_pcache_page,
    old: c_uint,
    new: c_uint,
) {
    // SAFETY: SQLite passes a cache `create` made.
    let cache = unsafe { cache(p) };
    if new != cache.swap {
        cache.largest = cache.largest.max(new);
    }
    if let Some(f) = default().and_then(|d| d.xRekey) {
        // SAFETY: the default's own method on its own cache and page.
        unsafe { f(cache.inner, page, old, new) }
    }
}

#[allow(unsafe_code)]
unsafe extern "C" fn truncate(p: *mut ffi::sqlite3_pcache, limit: c_uint) {
    // SAFETY: SQLite passes a cache `create` made.
    let cache = unsafe { cache(p) };
    // Pages numbered `limit` or more are to go: none was held since the last truncation
    // (the swap's number aside, which no page keeps past its split).
    if limit > cache.largest {
        LEFT_OUT.fetch_add(1, Ordering::Relaxed);
        return;
    }
    HANDED_ON.fetch_add(1, Ordering::Relaxed);
    if let Some(f) = default().and_then(|d| d.xTruncate) {
        // SAFETY: the default's own method on its own cache.
        unsafe { f(cache.inner, limit) }
    }
    cache.largest = limit.saturating_sub(1);
}

#[allow(unsafe_code)]
unsafe extern "C" fn destroy(p: *mut ffi::sqlite3_pcache) {
    // SAFETY: SQLite passes a cache `create` made, once, and never uses it again.
    let cache = unsafe { Box::from_raw(p.cast::<Cache>()) };
    if let Some(f) = default().and_then(|d| d.xDestroy) {
        // SAFETY: the default's own destructor on its own cache.
        unsafe { f(cache.inner) }
    }
}

#[allow(unsafe_code)]
unsafe extern "C" fn shrink(p: *mut ffi::sqlite3_pcache) {
    // SAFETY: SQLite passes a cache `create` made.
    let cache = unsafe { cache(p) };
    if let Some(f) = default().and_then(|d| d.xShrink) {
        // SAFETY: the default's own method on its own cache.
        unsafe { f(cache.inner) }
    }
}
