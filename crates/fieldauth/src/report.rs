//! What a provisioning command prints: one JSON object with `--json`, a line for people
//! otherwise.

#[derive(Debug)]
pub struct Report {
    pub json: serde_json::Value,
    pub text: String,
}

impl Report {
    pub fn new(json: serde_json::Value, text: String) -> Report {
        Report { json, text }
    }

    pub fn print(&self, as_json: bool) {
        match as_json {
            true => println!("{}", self.json),
            false if self.text.is_empty() => {}
            false => println!("{}", self.text),
        }
    }
}
