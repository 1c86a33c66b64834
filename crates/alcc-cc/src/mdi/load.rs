//! Loading models by path, once per file: every flow built from `mdi:model=FILE` shares one
//! parsed copy. A file is read again when its size or modification time changes.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;

use super::model::{MdiModel, ModelError};

/// A file's size and modification time.
type Stamp = (u64, Option<SystemTime>);
/// Parsed models by path, with the stamp of the version parsed.
type Cache = Mutex<HashMap<PathBuf, (Stamp, Arc<MdiModel>)>>;

fn cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The model in `path`, parsed at most once per version of the file.
pub fn load(path: &Path) -> Result<Arc<MdiModel>, ModelError> {
    let meta = std::fs::metadata(path)?;
    let stamp = (meta.len(), meta.modified().ok());
    // A panic while holding the lock cannot leave the map half-updated (one insert), so a
    // poisoned lock is still usable.
    let mut map = cache().lock().unwrap_or_else(|e| e.into_inner());
    if let Some((seen, model)) = map.get(path) {
        if *seen == stamp {
            return Ok(Arc::clone(model));
        }
    }
    let file = std::fs::File::open(path)?;
    let model = Arc::new(MdiModel::read(std::io::BufReader::new(file))?);
    map.insert(path.to_path_buf(), (stamp, Arc::clone(&model)));
    Ok(model)
}
