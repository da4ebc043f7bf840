//! The public file formats of docs/reference/files-and-cli.md (scene, inputs, state, saves) and
//! their schemas. Reading and writing them safely is [`crate::fileio`]'s, re-exported here.

pub mod inputs;
pub mod save;
pub mod scene;
pub mod schemas;
pub mod state;

pub use crate::fileio::{
    display_name, parse_json, parse_typed, read_text, write_atomic, write_atomic_with, FileError,
    MAX_FILE_BYTES,
};
pub use crate::limits::check_name;
