//! The compile cache behind `ge_model!`: compiled blobs under the target directory, keyed by
//! a SHA-256 digest of the model bytes (and its external data), the compile options and the
//! compiler build, so a macro re-expansion (a rebuild of the crate, rust-analyzer) costs a
//! few file reads instead of a compile.
//!
//! ```text
//! <dir>/<key>.om          the blob
//! <dir>/<key>.json        its interface, doc notes, compile report and dependencies
//! <dir>/index/<fast>.json fast path: digest of (path, size, mtime, options, compiler) →
//!                         <key>, so an unchanged model is not even read
//! ```
//!
//! Every file is written to a temporary name and then linked (or renamed) into place, so a
//! reader sees a complete file or none, and parallel expansions of the same model (cargo's
//! jobs, rust-analyzer next to cargo) never see a half-written blob. An entry's `.json` is
//! written after its `.om`: a present `.json` means a complete entry. Entries are immutable;
//! `cargo clean` removes them.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{Interface, report_notes};
use crate::error::{CompileError, Result};
use crate::options::CompileOptions;

/// Bump to invalidate every existing entry.
const CACHE_VERSION: &str = "ge-cache-v2";

/// A compile cache directory.
#[derive(Clone, Debug)]
pub struct Cache {
    dir: PathBuf,
}

/// What a cache entry holds besides the blob.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Meta {
    pub interface: Interface,
    /// Doc lines from the compile report ([`report_notes`]).
    pub notes: Vec<String>,
    /// The compile report (`--report` JSON).
    pub report: serde_json::Value,
    /// Files besides the model the blob depends on (external data, fusion switch file).
    pub dependencies: Vec<PathBuf>,
}

/// A compiled model served by the cache.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The content key (hex SHA-256).
    pub key: String,
    /// Where the blob is.
    pub blob_path: PathBuf,
    pub meta: Meta,
    /// `true` when nothing was compiled.
    pub hit: bool,
}

#[derive(Serialize, Deserialize)]
struct IndexRecord {
    key: String,
    /// (path, size, mtime ns) of each dependency when the record was written.
    deps: Vec<(PathBuf, u64, u128)>,
}

fn io_err(path: &Path, source: std::io::Error) -> CompileError {
    CompileError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn mtime_ns(m: &std::fs::Metadata) -> u128 {
    m.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos())
}

fn stamp(path: &Path) -> Option<(u64, u128)> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.len(), mtime_ns(&m)))
}

/// Identifies the compiler build: the crate version, the `.om` format version and, on
/// Linux, the size and time of the binary this code was loaded from (the proc-macro library
/// or the build script), so that rebuilding the compiler invalidates the cache even when
/// its version number does not change.
pub fn compiler_id() -> &'static str {
    static ID: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    ID.get_or_init(|| {
        let mut id = format!(
            "{} format {}",
            crate::PRODUCER,
            ge_runtime::format::FORMAT_VERSION
        );
        if let Some(obj) = loaded_object() {
            id += &format!(" {obj}");
        }
        id
    })
}

/// `path size mtime` of the shared object or executable holding this function.
fn loaded_object() -> Option<String> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let addr = compiler_id as fn() -> &'static str as usize;
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    for line in maps.lines() {
        let mut parts = line.splitn(6, ' ');
        let range = parts.next()?;
        let (lo, hi) = range.split_once('-')?;
        let (lo, hi) = (
            usize::from_str_radix(lo, 16).ok()?,
            usize::from_str_radix(hi, 16).ok()?,
        );
        if (lo..hi).contains(&addr) {
            let path = parts.nth(4)?.trim();
            let path = path.strip_suffix(" (deleted)").unwrap_or(path);
            let (len, mtime) = stamp(Path::new(path))?;
            return Some(format!("{path} {len} {mtime}"));
        }
    }
    None
}

/// The digest of an option file's content, or `-` for none.
fn file_digest(path: Option<&Path>) -> Result<String> {
    match path {
        Some(p) => {
            let bytes = std::fs::read(p).map_err(|e| io_err(p, e))?;
            Ok(hex(&Sha256::digest(&bytes)))
        }
        None => Ok("-".into()),
    }
}

/// The files of a calibration set (every file below `dir`, sorted), for the fingerprint and
/// the dependencies of a quantizing compile.
fn calib_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).map_err(|e| io_err(&d, e))? {
            let p = e.map_err(|e| io_err(&d, e))?.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                files.push(p);
            }
        }
    }
    files.sort();
    Ok(files)
}

/// The quantization a compile asks for, with its calibration set by content.
fn quantize_fingerprint(opts: &CompileOptions) -> Result<String> {
    let Some(q) = &opts.quantize else {
        return Ok("-".into());
    };
    let mut h = Sha256::new();
    for f in calib_files(&q.calib)? {
        let bytes = std::fs::read(&f).map_err(|e| io_err(&f, e))?;
        h.update(
            f.strip_prefix(&q.calib)
                .unwrap_or(&f)
                .to_string_lossy()
                .as_bytes(),
        );
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(&bytes);
    }
    Ok(format!("{:?}/{}", q.options, hex(&h.finalize())))
}

/// Everything in `opts` that changes the blob, as a stable string (the fusion switch,
/// precision list files and calibration set by content).
fn options_fingerprint(opts: &CompileOptions) -> Result<String> {
    let fusion = file_digest(opts.fusion_switch.as_deref())?;
    let keep = file_digest(opts.keep_dtype.as_deref())?;
    let mixlist = file_digest(opts.modify_mixlist.as_deref())?;
    let quantize = quantize_fingerprint(opts)?;
    Ok(format!(
        "inputs={:?};values={:?};opt={:?};precision={:?};keep={keep};mixlist={mixlist};io={:?};device={:?};reuse={};fusion={fusion};limits={:?};gears={:?}/{:?}/{:?};quantize={quantize};int8={:?}",
        opts.input_shapes,
        opts.input_values,
        opts.opt_level,
        opts.precision,
        opts.io_dtype,
        opts.device,
        opts.memory_reuse,
        // A cached blob must not let a model past limits it was not compiled under.
        opts.limits,
        opts.gears,
        opts.gear_pad,
        opts.gear_inputs,
        opts.int8_rounding
    ))
}

/// Files holding external data that `bytes` (an ONNX model in `dir`) refers to. Only decodes
/// the model when the bytes mention a `location` key at all.
fn external_data(bytes: &[u8], dir: &Path) -> Vec<PathBuf> {
    if !bytes.windows(8).any(|w| w == b"location") {
        return Vec::new();
    }
    let Ok(model) = crate::onnx::decode_model(bytes) else {
        return Vec::new();
    };
    let Some(g) = &model.graph else {
        return Vec::new();
    };
    let mut tensors: Vec<&crate::onnx::proto::TensorProto> = g.initializer.iter().collect();
    for n in &g.node {
        for a in &n.attribute {
            tensors.extend(a.t.iter());
            tensors.extend(a.tensors.iter());
        }
    }
    let mut files: Vec<PathBuf> = tensors
        .iter()
        .flat_map(|t| &t.external_data)
        .filter(|e| e.key() == "location")
        .map(|e| dir.join(e.value()))
        .collect();
    files.sort();
    files.dedup();
    files
}

/// Writes `bytes` to `path` so that readers see all of it or nothing. With `keep_existing`,
/// an existing file wins (entries are immutable; keeping it keeps its mtime, so cargo does
/// not see a changed dependency). `mtime` backdates the file: a blob written while rustc
/// runs would otherwise look newer than the build that embedded it, and cargo would
/// rebuild once more for nothing.
fn write_atomic(
    path: &Path,
    bytes: &[u8],
    keep_existing: bool,
    mtime: Option<SystemTime>,
) -> Result<()> {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("entry");
    let tmp = path.with_file_name(format!(".{name}.{}.{nanos}.tmp", std::process::id()));
    {
        let mut f = std::fs::File::create(&tmp).map_err(|e| io_err(&tmp, e))?;
        std::io::Write::write_all(&mut f, bytes).map_err(|e| io_err(&tmp, e))?;
        if let Some(t) = mtime {
            f.set_modified(t).map_err(|e| io_err(&tmp, e))?;
        }
    }
    let placed = if keep_existing {
        match std::fs::hard_link(&tmp, path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
            // A file system without hard links: rename replaces atomically.
            Err(_) => std::fs::rename(&tmp, path),
        }
    } else {
        std::fs::rename(&tmp, path)
    };
    let _ = std::fs::remove_file(&tmp);
    placed.map_err(|e| io_err(path, e))
}

impl Cache {
    /// A cache in `dir` (created on first write).
    pub fn new(dir: impl Into<PathBuf>) -> Cache {
        Cache { dir: dir.into() }
    }

    /// The cache of a package being built: `$GE_CACHE_DIR` if set, else `ge-cache/` in
    /// `$CARGO_TARGET_DIR`, else in the nearest `target/` directory above `manifest_dir`
    /// (one holding cargo's `CACHEDIR.TAG`, or next to a `Cargo.lock`), else in the system's
    /// temporary directory.
    pub fn locate(manifest_dir: &Path) -> Cache {
        if let Some(d) = std::env::var_os("GE_CACHE_DIR") {
            return Cache::new(d);
        }
        if let Some(d) = std::env::var_os("CARGO_TARGET_DIR") {
            return Cache::new(PathBuf::from(d).join("ge-cache"));
        }
        for dir in manifest_dir.ancestors() {
            if dir.join("target").join("CACHEDIR.TAG").is_file() {
                return Cache::new(dir.join("target").join("ge-cache"));
            }
        }
        for dir in manifest_dir.ancestors() {
            if dir.join("Cargo.lock").is_file() {
                return Cache::new(dir.join("target").join("ge-cache"));
            }
        }
        Cache::new(std::env::temp_dir().join("ge-cache"))
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn load(&self, key: &str) -> Option<Entry> {
        let text = std::fs::read_to_string(self.dir.join(format!("{key}.json"))).ok()?;
        let meta: Meta = serde_json::from_str(&text).ok()?;
        let blob_path = self.dir.join(format!("{key}.om"));
        if !blob_path.is_file() {
            return None;
        }
        Some(Entry {
            key: key.to_string(),
            blob_path,
            meta,
            hit: true,
        })
    }

    fn write_index(&self, fast: &str, key: &str, deps: &[PathBuf]) {
        let rec = IndexRecord {
            key: key.to_string(),
            deps: deps
                .iter()
                .filter_map(|p| stamp(p).map(|(l, m)| (p.clone(), l, m)))
                .collect(),
        };
        let dir = self.dir.join("index");
        if let Ok(text) = serde_json::to_string(&rec)
            && std::fs::create_dir_all(&dir).is_ok()
        {
            // Best effort: a missing index entry only costs a hash next time.
            let _ = write_atomic(
                &dir.join(format!("{fast}.json")),
                text.as_bytes(),
                false,
                None,
            );
        }
    }

    fn read_index(&self, fast: &str) -> Option<String> {
        let text =
            std::fs::read_to_string(self.dir.join("index").join(format!("{fast}.json"))).ok()?;
        let rec: IndexRecord = serde_json::from_str(&text).ok()?;
        for (p, len, mtime) in &rec.deps {
            if stamp(p) != Some((*len, *mtime)) {
                return None;
            }
        }
        Some(rec.key)
    }

    /// The blob for `model` compiled with `opts`: from the cache if an entry exists,
    /// otherwise compiled and stored.
    pub fn compile(&self, model: &Path, opts: &CompileOptions) -> Result<Entry> {
        let model = std::path::absolute(model).map_err(|e| io_err(model, e))?;
        let meta_model = std::fs::metadata(&model).map_err(|e| io_err(&model, e))?;
        let meta = &meta_model;
        if !meta.is_file() {
            return Err(io_err(&model, std::io::Error::other("not a regular file")));
        }
        let options = options_fingerprint(opts)?;
        let fast = hex(&Sha256::digest(
            format!(
                "{CACHE_VERSION}\n{}\n{}\n{}\n{}\n{options}",
                compiler_id(),
                model.display(),
                meta.len(),
                mtime_ns(meta)
            )
            .as_bytes(),
        ));
        if let Some(key) = self.read_index(&fast)
            && let Some(entry) = self.load(&key)
        {
            return Ok(entry);
        }

        let bytes = std::fs::read(&model).map_err(|e| io_err(&model, e))?;
        let model_dir = model.parent().unwrap_or(Path::new("."));
        let mut deps = external_data(&bytes, model_dir);
        let mut h = Sha256::new();
        h.update(format!("{CACHE_VERSION}\n{}\n{options}\n", compiler_id()).as_bytes());
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(&bytes);
        for d in &deps {
            // Unreadable external data: let the compiler report it (below).
            let data = std::fs::read(d).unwrap_or_default();
            h.update(d.to_string_lossy().as_bytes());
            h.update((data.len() as u64).to_le_bytes());
            h.update(&data);
        }
        let key = hex(&h.finalize());
        deps.extend(
            [&opts.fusion_switch, &opts.keep_dtype, &opts.modify_mixlist]
                .into_iter()
                .flatten()
                .cloned(),
        );
        if let Some(q) = &opts.quantize {
            deps.extend(calib_files(&q.calib)?);
        }
        let mut index_deps = deps.clone();
        index_deps.push(model.clone());

        if let Some(entry) = self.load(&key) {
            self.write_index(&fast, &key, &index_deps);
            return Ok(entry);
        }

        let compiled = crate::compile_bytes(&bytes, Some(model_dir), opts)?;
        let meta = Meta {
            interface: Interface::from_blob(&compiled.blob)?,
            notes: report_notes(&compiled.report),
            report: serde_json::to_value(&compiled.report)
                .map_err(|e| CompileError::Model(format!("report: {e}")))?,
            dependencies: deps,
        };
        std::fs::create_dir_all(&self.dir).map_err(|e| io_err(&self.dir, e))?;
        let blob_path = self.dir.join(format!("{key}.om"));
        let model_mtime = meta_model.modified().ok();
        write_atomic(&blob_path, &compiled.blob, true, model_mtime)?;
        let text = serde_json::to_string_pretty(&meta)
            .map_err(|e| CompileError::Model(format!("cache metadata: {e}")))?;
        write_atomic(
            &self.dir.join(format!("{key}.json")),
            text.as_bytes(),
            true,
            None,
        )?;
        self.write_index(&fast, &key, &index_deps);
        Ok(Entry {
            key,
            blob_path,
            meta,
            hit: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digits() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/digits/models/digits.onnx")
    }

    fn opts() -> CompileOptions {
        let mut o = CompileOptions::default();
        o.input_shapes.insert("x".into(), vec![1, 1, 8, 8]);
        o
    }

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("ge-cache-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn miss_then_hit_then_touch() {
        let dir = tmp("hit");
        let cache = Cache::new(&dir);
        // A private copy of the model, so touching it disturbs nothing else.
        let model = dir.join("m").join("digits.onnx");
        std::fs::create_dir_all(model.parent().unwrap()).unwrap();
        std::fs::copy(digits(), &model).unwrap();

        let a = cache.compile(&model, &opts()).unwrap();
        assert!(!a.hit);
        assert_eq!(a.meta.interface.inputs[0].shape, [1, 1, 8, 8]);
        assert_eq!(a.meta.interface.outputs.len(), 2);
        let b = cache.compile(&model, &opts()).unwrap();
        assert!(b.hit);
        assert_eq!(a.key, b.key);
        assert_eq!(
            std::fs::read(&a.blob_path).unwrap(),
            std::fs::read(&b.blob_path).unwrap()
        );

        // Same bytes, new mtime: the index misses, the content key hits.
        let f = std::fs::File::options().append(true).open(&model).unwrap();
        f.set_modified(SystemTime::now() + std::time::Duration::from_secs(5))
            .unwrap();
        let c = cache.compile(&model, &opts()).unwrap();
        assert!(c.hit);
        assert_eq!(c.key, a.key);

        // Other options: another entry.
        let mut o = opts();
        o.memory_reuse = false;
        let d = cache.compile(&model, &o).unwrap();
        assert!(!d.hit);
        assert_ne!(d.key, a.key);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn errors_are_not_cached() {
        let dir = tmp("err");
        let cache = Cache::new(&dir);
        let e = cache
            .compile(&digits(), &CompileOptions::default())
            .unwrap_err();
        assert!(e.to_string().contains("symbolic"), "{e}");
        assert!(matches!(
            cache.compile(&dir.join("missing.onnx"), &opts()),
            Err(CompileError::Io { .. })
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn compiler_id_names_the_binary() {
        let id = compiler_id();
        assert!(id.starts_with(crate::PRODUCER), "{id}");
        if cfg!(target_os = "linux") {
            assert!(id.split(' ').count() > 4, "{id}");
        }
    }
}
