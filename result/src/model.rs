//! The result of a strata run, and its JSON file (`result.json`, documented in
//! `docs/FORMATS.md`).
//!
//! The file keeps the *sampled* trees (finest granularity, nothing cut), so every view can
//! be derived from it later: `strata view`, the terminal UI and the temporal-order analysis
//! read it back. Reading is strict: a file that is malformed, of another kind, or written by
//! a newer format version is refused with one line naming the file and the problem.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use strata_filters::taskset::{format_set, parse_ranges, rankset_from_runs};
use strata_filters::{
    CodeFrame, CodeKind, EqClass, Frame, NodeId, PrefixTree, RankSet, Special, TaskSet,
    ViewOptions, equivalence_classes, view,
};
use thiserror::Error;

/// The `format` field of every result file.
pub const FORMAT_NAME: &str = "strata-result";
/// The largest job a result file may describe. Analyses allocate per rank, so an absurd
/// `job_size` in a damaged file must be refused, not allocated (64 Mi ranks, several
/// times today's largest machines).
pub const MAX_JOB_SIZE: u32 = 1 << 26;

/// The format version this strata writes and the newest it reads.
pub const FORMAT_VERSION: u32 = 1;

/// Which of the two sampled trees.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TreeKind {
    /// Trace/space: the last sample of every task.
    TwoD,
    /// Trace/space/time: all samples merged.
    #[default]
    ThreeD,
}

impl TreeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TreeKind::TwoD => "2d",
            TreeKind::ThreeD => "3d",
        }
    }
}

/// The job a result describes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobInfo {
    /// Job id (resource manager's), or a name for local runs.
    pub id: String,
    /// `slurm`, `local`, `pids`, ...
    pub resource_manager: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launcher_pid: Option<u32>,
}

/// How the samples were taken.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SamplingInfo {
    pub samples: u32,
    pub interval_ms: u64,
    /// Every thread was sampled (else the main thread of each rank).
    pub threads: bool,
    /// RFC 3339 UTC times of the first and last sample.
    pub started: String,
    pub finished: String,
}

/// One rank of the job.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankInfo {
    pub rank: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executable: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_id: Option<String>,
    /// Process state letter from `/proc/PID/stat` (R, S, D, T, Z, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// Why this rank could not be (fully) sampled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What strata's PMPI library recorded in the rank, when it was loaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pmpi: Option<crate::pmpi::PmpiRecord>,
    /// The CPython version whose frames were read in the rank (`3.11.2`), when it runs one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<String>,
    /// Why the rank's Python frames could not be read, when it runs CPython.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python_error: Option<String>,
}

/// One sampled thread (only when threads were sampled): thread ids in the trees index this.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadInfo {
    pub id: u32,
    pub rank: u32,
    pub tid: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// One of the MPI runtime's own threads (`strata_filters::runtime_threads`), which
    /// views leave out by default. Derived from the trees when the file is written.
    #[serde(
        default,
        skip_serializing_if = "std::ops::Not::not",
        skip_deserializing
    )]
    pub runtime: bool,
}

/// Ranks absent from the trees, and why.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MissingRanks {
    /// Compact rank list, e.g. `4-7`.
    pub ranks: String,
    pub reason: String,
}

/// Everything about a run except the trees.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResultMeta {
    pub strata_version: String,
    /// RFC 3339 UTC time the result was assembled.
    pub created: String,
    pub job: JobInfo,
    pub sampling: SamplingInfo,
    /// Number of ranks in the job (the rank space of the trees).
    pub job_size: u32,
    pub ranks: Vec<RankInfo>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub threads: Vec<ThreadInfo>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<MissingRanks>,
    /// Variables read across the ranks after sampling (`--var`, loop-order variables).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variables: Vec<crate::variables::VariableReads>,
}

/// A complete result: metadata and the two rank-order trees.
#[derive(Clone, Debug)]
pub struct StrataResult {
    pub meta: ResultMeta,
    pub tree_2d: PrefixTree<RankSet>,
    pub tree_3d: PrefixTree<RankSet>,
}

impl StrataResult {
    /// Keeps the variables read after sampling (`requests` and the tree's merged reply),
    /// merged into value classes; the sampled ranks that did not answer are named.
    pub fn set_variables(
        &mut self,
        requests: &[strata_proto::overlay::VariableRequest],
        reply: &strata_proto::overlay::VariablesReply,
    ) {
        let sampled = self.tree_2d.node(NodeId::ROOT).tasks.clone();
        self.meta.variables = crate::variables::from_reply(requests, reply, &sampled);
    }

    /// Marks the variables of `for_verdict` as read for the verdict only.
    pub fn mark_verdict_reads(&mut self, for_verdict: &[strata_proto::overlay::VariableRequest]) {
        for v in &mut self.meta.variables {
            v.for_verdict = for_verdict
                .iter()
                .any(|r| r.function == v.function && r.variable == v.variable);
        }
    }

    /// The variables the user asked for (`--var`, loop counters), without those read for
    /// the verdict only: what the renderings list.
    pub fn asked_variables(&self) -> Vec<crate::variables::VariableReads> {
        self.meta
            .variables
            .iter()
            .filter(|v| !v.for_verdict)
            .cloned()
            .collect()
    }

    pub fn tree(&self, kind: TreeKind) -> &PrefixTree<RankSet> {
        match kind {
            TreeKind::TwoD => &self.tree_2d,
            TreeKind::ThreeD => &self.tree_3d,
        }
    }

    /// Number of ranks that appear in the 3D tree (were sampled at least once).
    pub fn sampled_ranks(&self) -> u64 {
        self.tree_3d.node(NodeId::ROOT).tasks.count()
    }

    /// A short name for file and directory names: the job id made path-safe.
    pub fn file_stem(&self) -> String {
        self.meta
            .job
            .id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    }
}

/// Why a result file could not be read. Displays as one line naming the file.
#[derive(Debug, Error)]
#[error("{path}: {problem}")]
pub struct ResultFileError {
    pub path: String,
    pub problem: String,
}

// ----- the file format -----

#[derive(Serialize, Deserialize)]
struct FileHeader {
    format: String,
    format_version: u32,
}

#[derive(Serialize, Deserialize)]
struct ResultFile {
    format: String,
    format_version: u32,
    #[serde(flatten)]
    meta: ResultMeta,
    /// The view `classes` were computed in.
    default_view: ViewFile,
    classes: Vec<ClassFile>,
    trees: TreesFile,
    /// Analyses' objects (`verdict`), after the trees. A reader derives them again from the
    /// trees, so they are written, never read back.
    #[serde(flatten, skip_deserializing)]
    analyses: BTreeMap<String, serde_json::Value>,
}

/// Top-level keys of the file itself, which an analysis's field never replaces.
const OWN_FIELDS: &[&str] = &[
    "format",
    "format_version",
    "strata_version",
    "created",
    "job",
    "sampling",
    "job_size",
    "ranks",
    "threads",
    "missing",
    "variables",
    "default_view",
    "classes",
    "trees",
];

#[derive(Serialize, Deserialize)]
struct ViewFile {
    tree: String,
    granularity: String,
    cut_below_mpi: bool,
    /// Whether MPI entries are named by their C call (`ViewOptions::mpi_call_names`);
    /// the file's classes keep the frames' own names.
    #[serde(default)]
    mpi_call_names: bool,
}

#[derive(Serialize, Deserialize)]
struct ClassFile {
    ranks: String,
    count: u64,
    /// The lowest rank of the class: the one to hand to a debugger.
    representative: u32,
    /// Each leaf path of the class, outermost frame first, as frame names.
    paths: Vec<Vec<String>>,
}

#[derive(Serialize, Deserialize)]
struct TreesFile {
    #[serde(rename = "2d")]
    two_d: TreeFile,
    #[serde(rename = "3d")]
    three_d: TreeFile,
}

#[derive(Serialize, Deserialize)]
struct TreeFile {
    thread_space: u32,
    nodes: Vec<NodeFile>,
}

#[derive(Serialize, Deserialize)]
struct NodeFile {
    id: u32,
    parent: Option<u32>,
    frame: Option<FrameFile>,
    ranks: String,
    count: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    threads: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tcount: Option<u64>,
}

#[derive(Serialize, Deserialize, Default)]
struct FrameFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    special: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    function: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    module: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    build_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    offset: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    line: Option<u32>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    inlined: bool,
    /// `python` (a Python function's frame) or `interpreter` (the Python interpreter's own
    /// code); absent for machine code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kind: Option<String>,
    /// The MPI call an MPI entry frame is in, by its C name (`MPI_Recv` for `PMPI_Recv`,
    /// `mpi_recv_`, ...): what views show. Derived from the other fields, so written and
    /// never read back.
    #[serde(default, skip_serializing_if = "Option::is_none", skip_deserializing)]
    mpi_call: Option<String>,
}

fn frame_to_file(f: &Frame) -> FrameFile {
    match f {
        Frame::Special(s) => FrameFile {
            special: Some(s.label().trim_matches(['[', ']']).to_string()),
            ..Default::default()
        },
        Frame::Code(c) => FrameFile {
            special: None,
            function: c.function.clone(),
            module: c.module.as_ref().map(|m| m.path.clone()),
            build_id: c.module.as_ref().and_then(|m| m.build_id.clone()),
            offset: c.offset,
            file: c.file.clone(),
            line: c.line,
            inlined: c.inlined,
            kind: c.kind.as_str().map(str::to_string),
            mpi_call: c.mpi_call().map(|call| call.name),
        },
    }
}

fn frame_from_file(f: FrameFile) -> Result<Frame, String> {
    if let Some(s) = f.special {
        return Special::from_label(&format!("[{s}]"))
            .map(Frame::Special)
            .ok_or_else(|| format!("unknown special frame '{s}'"));
    }
    let kind = match f.kind.as_deref() {
        None => CodeKind::Native,
        Some(k) => CodeKind::from_name(k).ok_or_else(|| format!("unknown frame kind '{k}'"))?,
    };
    CodeFrame::from_fields(
        f.function, f.module, f.build_id, f.offset, f.file, f.line, f.inlined,
    )
    .map(|c| Frame::Code(CodeFrame { kind, ..c }))
    .map_err(|e| e.to_string())
}

fn tree_to_file(tree: &PrefixTree<RankSet>) -> TreeFile {
    let nodes = tree
        .node_ids()
        .map(|id| {
            let n = tree.node(id);
            NodeFile {
                id: id.0,
                parent: n.parent.map(|p| p.0),
                frame: tree.node_frame(id).map(frame_to_file),
                ranks: format_set(&n.tasks),
                count: n.tasks.count(),
                threads: tree.has_threads().then(|| format_set(&n.threads)),
                tcount: tree.has_threads().then(|| n.threads.count()),
            }
        })
        .collect();
    TreeFile {
        thread_space: tree.thread_space(),
        nodes,
    }
}

fn tree_from_file(t: TreeFile, job_size: u32, which: &str) -> Result<PrefixTree<RankSet>, String> {
    let mut tree: PrefixTree<RankSet> = PrefixTree::new(job_size, t.thread_space);
    let set = |text: &str, space: u32, id: u32, what: &str| -> Result<RankSet, String> {
        let runs =
            parse_ranges(text).map_err(|e| format!("{which} tree node {id}: {what}: {e}"))?;
        if runs.last().is_some_and(|r| r.1 > space) {
            return Err(format!(
                "{which} tree node {id}: {what} '{text}' exceed the job's {space}"
            ));
        }
        Ok(rankset_from_runs(&runs))
    };
    for (i, n) in t.nodes.into_iter().enumerate() {
        let id = n.id;
        if id as usize != i {
            return Err(format!(
                "{which} tree: node {i} has id {id}; nodes must be listed in id order"
            ));
        }
        let ranks = set(&n.ranks, job_size, id, "ranks")?;
        if ranks.len() != n.count {
            return Err(format!(
                "{which} tree node {id}: count {} but ranks '{}' hold {}",
                n.count,
                n.ranks,
                ranks.len()
            ));
        }
        let threads = match &n.threads {
            Some(t) => set(t, tree.thread_space(), id, "threads")?,
            None => RankSet::new(),
        };
        let node = match (i, n.parent, n.frame) {
            (0, None, None) => NodeId::ROOT,
            (0, _, _) => {
                return Err(format!(
                    "{which} tree: node 0 must be the root (no parent, no frame)"
                ));
            }
            (_, Some(p), Some(f)) => {
                if p >= id {
                    return Err(format!(
                        "{which} tree node {id}: parent {p} must come before it"
                    ));
                }
                // A path's ranks took every frame above it: a node holds no rank its parent
                // lacks, and a node no rank took would not exist.
                if ranks.is_empty() {
                    return Err(format!("{which} tree node {id}: no rank took this frame"));
                }
                let above = &tree.node(NodeId(p)).tasks;
                if !ranks.is_subset(above) {
                    let extra: RankSet = &ranks - above;
                    return Err(format!(
                        "{which} tree node {id}: ranks {} are not in its parent's (node {p}: '{}')",
                        format_set(&extra),
                        format_set(above)
                    ));
                }
                let frame =
                    frame_from_file(f).map_err(|e| format!("{which} tree node {id}: {e}"))?;
                let fid = tree.intern(&frame);
                if tree.child(NodeId(p), fid).is_some() {
                    return Err(format!(
                        "{which} tree node {id}: a sibling has the same frame"
                    ));
                }
                tree.child_or_insert(NodeId(p), fid)
            }
            _ => {
                return Err(format!(
                    "{which} tree node {id}: a non-root node needs a parent and a frame"
                ));
            }
        };
        let (r, t) = tree.node_sets_mut(node);
        *r = ranks;
        *t = threads;
    }
    Ok(tree)
}

fn view_file(opts: ViewOptions, kind: TreeKind) -> ViewFile {
    ViewFile {
        tree: kind.as_str().to_string(),
        granularity: opts.granularity.as_str().to_string(),
        cut_below_mpi: opts.cut_below_mpi,
        mpi_call_names: opts.mpi_call_names,
    }
}

/// Classes of a view, with the paths of their leaves as frame names.
pub fn class_paths(tree: &PrefixTree<RankSet>, class: &EqClass<RankSet>) -> Vec<Vec<String>> {
    class
        .leaves
        .iter()
        .map(|&l| tree.path_frames(l).iter().map(Frame::name).collect())
        .collect()
}

impl StrataResult {
    /// The metadata as written, its threads marked when they are the MPI runtime's.
    fn meta_with_runtime_threads(&self) -> ResultMeta {
        let mut meta = self.meta.clone();
        let runtime = strata_filters::runtime_threads(&self.tree_3d);
        if !runtime.is_empty() {
            for t in &mut meta.threads {
                t.runtime = runtime.contains(t.id);
            }
        }
        meta
    }

    /// The result as pretty JSON.
    pub fn to_json(&self) -> String {
        self.to_json_with(None)
    }

    /// The result as pretty JSON, with the fields an analysis adds (the verdict's object):
    /// they follow the file's own fields, which they never replace.
    pub fn to_json_with(&self, annotation: Option<&dyn crate::annotation::Annotation>) -> String {
        // The file's classes keep every frame, as its trees do, by the frames' own names
        // (each MPI entry frame says its call in `mpi_call`).
        let opts = ViewOptions {
            hide_start_up: false,
            hide_interpreter: false,
            mpi_call_names: false,
            ..ViewOptions::default()
        };
        let v = view(&self.tree_3d, opts);
        let classes = equivalence_classes(&v)
            .iter()
            .map(|c| ClassFile {
                ranks: format_set(&c.tasks),
                count: c.tasks.count(),
                representative: c.tasks.min().expect("classes are not empty"),
                paths: class_paths(&v, c),
            })
            .collect();
        let file = ResultFile {
            format: FORMAT_NAME.to_string(),
            format_version: FORMAT_VERSION,
            meta: self.meta_with_runtime_threads(),
            default_view: view_file(opts, TreeKind::ThreeD),
            classes,
            trees: TreesFile {
                two_d: tree_to_file(&self.tree_2d),
                three_d: tree_to_file(&self.tree_3d),
            },
            analyses: annotation
                .map(|a| a.result_fields())
                .unwrap_or_default()
                .into_iter()
                .filter(|(key, _)| !OWN_FIELDS.contains(key))
                .map(|(key, value)| (key.to_string(), value))
                .collect(),
        };
        let mut s = serde_json::to_string_pretty(&file).expect("result serializes");
        s.push('\n');
        s
    }

    /// Parses a result file's text; `path` names it in errors.
    pub fn from_json(text: &str, path: &str) -> Result<StrataResult, ResultFileError> {
        let err = |problem: String| ResultFileError {
            path: path.to_string(),
            problem,
        };
        let header: FileHeader = serde_json::from_str(text).map_err(|e| {
            err(match e.classify() {
                serde_json::error::Category::Eof => {
                    format!("the file ends early ({e}): was it truncated while being written?")
                }
                serde_json::error::Category::Syntax => format!("not valid JSON ({e})"),
                _ => format!("not a strata result file ({e})"),
            })
        })?;
        if header.format != FORMAT_NAME {
            return Err(err(format!(
                "format is '{}', expected '{FORMAT_NAME}'",
                header.format
            )));
        }
        if header.format_version > FORMAT_VERSION {
            return Err(err(format!(
                "written in result format version {}, but this strata ({}) reads up to version {FORMAT_VERSION}: upgrade strata",
                header.format_version,
                env!("CARGO_PKG_VERSION")
            )));
        }
        if header.format_version == 0 {
            return Err(err("format_version 0 does not exist".to_string()));
        }
        let file: ResultFile =
            serde_json::from_str(text).map_err(|e| err(format!("malformed result: {e}")))?;
        let size = file.meta.job_size;
        if size > MAX_JOB_SIZE {
            return Err(err(format!(
                "job_size {size} exceeds strata's limit of {MAX_JOB_SIZE} ranks"
            )));
        }
        let tree_2d = tree_from_file(file.trees.two_d, size, "2d").map_err(err)?;
        let tree_3d = tree_from_file(file.trees.three_d, size, "3d").map_err(err)?;
        // Every rank of the job is in the tree, under a special frame if it could not be
        // sampled, unless the result says why it is missing.
        if size > 0 && tree_3d.node(NodeId::ROOT).tasks.is_empty() && file.meta.missing.is_empty() {
            return Err(err(format!(
                "the trees hold none of the job's {size} ranks, and no rank is listed as missing"
            )));
        }
        Ok(StrataResult {
            meta: file.meta,
            tree_2d,
            tree_3d,
        })
    }

    /// Reads a result file.
    pub fn read(path: &Path) -> Result<StrataResult, ResultFileError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ResultFileError {
            path: name.clone(),
            problem: format!("cannot read: {e}"),
        })?;
        Self::from_json(&text, &name)
    }
}

/// "Take N more samples": adds a later sampling `new` of the same job to `old`.
///
/// The 3D trees are unioned (every sample of both counts), the 2D tree is the newer one (it
/// is the last sample by definition), sample counts add up and the time span runs from the
/// first sample of `old` to the last of `new`. Rank information and missing ranks come from
/// `new`, the job's current state, over `old`'s for ranks `new` does not describe.
///
/// Thread ids index `meta.threads` and each sampling numbers its threads anew, so `new`'s
/// ids are remapped by (rank, tid) first: a thread both saw keeps `old`'s id, a thread only
/// `new` saw gets the next free id. Samples with and without threads do not mix (an edge
/// would count threads for some samples only): then `new` is returned as it is.
pub fn merge_more(old: &StrataResult, new: StrataResult) -> StrataResult {
    if old.meta.sampling.threads != new.meta.sampling.threads {
        return new;
    }
    let mut threads = old.meta.threads.clone();
    let mut id_of: HashMap<(u32, u32), u32> =
        threads.iter().map(|t| ((t.rank, t.tid), t.id)).collect();
    let mut next = threads
        .iter()
        .map(|t| t.id + 1)
        .max()
        .unwrap_or(0)
        .max(old.tree_3d.thread_space());
    let mut merged_id: HashMap<u32, u32> = HashMap::new();
    for t in &new.meta.threads {
        let id = *id_of.entry((t.rank, t.tid)).or_insert_with(|| {
            threads.push(ThreadInfo {
                id: next,
                ..t.clone()
            });
            next += 1;
            next - 1
        });
        merged_id.insert(t.id, id);
    }
    // A thread id the new result's table does not describe stays distinct from every other.
    for tree in [&new.tree_2d, &new.tree_3d] {
        for t in tree.node(NodeId::ROOT).threads.iter() {
            merged_id.entry(t).or_insert_with(|| {
                next += 1;
                next - 1
            });
        }
    }
    let thread_space = if old.meta.sampling.threads { next } else { 0 };
    let task_space = old.meta.job_size.max(new.meta.job_size);
    let tree_2d = relabel_threads(&new.tree_2d, task_space, thread_space, |t| merged_id[&t]);
    let mut tree_3d = relabel_threads(&old.tree_3d, task_space, thread_space, |t| t);
    tree_3d.absorb(&relabel_threads(
        &new.tree_3d,
        task_space,
        thread_space,
        |t| merged_id[&t],
    ));

    let mut ranks: BTreeMap<u32, RankInfo> =
        old.meta.ranks.iter().map(|r| (r.rank, r.clone())).collect();
    ranks.extend(new.meta.ranks.into_iter().map(|r| (r.rank, r)));
    let (o, n) = (&old.meta.sampling, &new.meta.sampling);
    let sampling = SamplingInfo {
        samples: o.samples.saturating_add(n.samples),
        interval_ms: n.interval_ms,
        threads: n.threads,
        started: o.started.clone(),
        finished: n.finished.clone(),
    };
    StrataResult {
        meta: ResultMeta {
            strata_version: new.meta.strata_version,
            created: new.meta.created,
            job: old.meta.job.clone(),
            sampling,
            job_size: task_space,
            ranks: ranks.into_values().collect(),
            threads,
            missing: new.meta.missing,
            // Values belong to the moment they were read: the newest sample's.
            variables: new.meta.variables,
        },
        tree_2d,
        tree_3d,
    }
}

/// A copy of `tree` over other index spaces, its thread ids passed through `map`.
fn relabel_threads(
    tree: &PrefixTree<RankSet>,
    task_space: u32,
    thread_space: u32,
    map: impl Fn(u32) -> u32,
) -> PrefixTree<RankSet> {
    let mut out = tree.same_shape(task_space, thread_space);
    for id in tree.node_ids() {
        let n = tree.node(id);
        let (tasks, threads) = out.node_sets_mut(id);
        *tasks = n.tasks.clone();
        *threads = n.threads.iter().map(&map).collect();
    }
    out
}

/// Now as an RFC 3339 UTC timestamp (second precision).
pub fn now_rfc3339() -> String {
    rfc3339(std::time::SystemTime::now())
}

/// A time as an RFC 3339 UTC timestamp (second precision).
pub fn rfc3339(t: std::time::SystemTime) -> String {
    let t = time::OffsetDateTime::from(t)
        .replace_nanosecond(0)
        .expect("0 is valid");
    t.format(&time::format_description::well_known::Rfc3339)
        .expect("formats")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An analysis's field may not replace the file's own: the list of them must name every
    /// key the file writes, or a new field of the file could be overwritten unnoticed.
    #[test]
    fn own_fields_name_every_key_of_the_file() {
        let mut r = crate::example::ring_result();
        r.meta.threads.push(ThreadInfo::default());
        r.meta.missing.push(MissingRanks::default());
        let v: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
        for key in v.as_object().unwrap().keys() {
            assert!(
                OWN_FIELDS.contains(&key.as_str()),
                "{key} is not in OWN_FIELDS"
            );
        }
    }

    fn f(name: &str) -> Frame {
        Frame::function(name)
    }

    /// A result of `samples` samples; `paths` are (rank, tid, path) and, with threads, thread
    /// ids are handed out in the order threads first appear (as a sampler does).
    fn sampled(samples: u32, threads: bool, paths: &[(u32, u32, &[&str])]) -> StrataResult {
        let mut table: Vec<ThreadInfo> = Vec::new();
        for &(rank, tid, _) in paths {
            if threads && !table.iter().any(|t| (t.rank, t.tid) == (rank, tid)) {
                table.push(ThreadInfo {
                    id: table.len() as u32,
                    rank,
                    tid,
                    name: None,
                    runtime: false,
                });
            }
        }
        let space = if threads { table.len() as u32 } else { 0 };
        let mut tree: PrefixTree<RankSet> = PrefixTree::new(4, space);
        for &(rank, tid, path) in paths {
            let thread = table
                .iter()
                .find(|t| (t.rank, t.tid) == (rank, tid))
                .map(|t| t.id);
            let frames: Vec<Frame> = path.iter().map(|n| f(n)).collect();
            tree.add_trace(&frames, rank, thread);
        }
        StrataResult {
            meta: ResultMeta {
                job: JobInfo {
                    id: "7".into(),
                    resource_manager: "local".into(),
                    ..Default::default()
                },
                sampling: SamplingInfo {
                    samples,
                    interval_ms: 100,
                    threads,
                    started: format!("start-{samples}"),
                    finished: format!("end-{samples}"),
                },
                job_size: 4,
                ranks: (0..4)
                    .map(|rank| RankInfo {
                        rank,
                        state: Some(format!("S{samples}")),
                        ..Default::default()
                    })
                    .collect(),
                threads: table,
                ..Default::default()
            },
            tree_2d: tree.clone(),
            tree_3d: tree,
        }
    }

    fn threads_at(tree: &PrefixTree<RankSet>, path: &[&str]) -> Vec<u32> {
        let frames: Vec<Frame> = path.iter().map(|n| f(n)).collect();
        let node = tree
            .node_ids()
            .find(|&n| tree.path_frames(n) == frames)
            .expect("path exists");
        tree.node(node).threads.iter().collect()
    }

    #[test]
    fn more_samples_union_the_3d_trees_and_keep_the_newest_2d_tree() {
        let old = sampled(10, false, &[(0, 0, &["main", "a"]), (1, 0, &["main", "b"])]);
        let new = sampled(5, false, &[(0, 0, &["main", "c"]), (1, 0, &["main", "b"])]);
        let m = merge_more(&old, new.clone());
        let mut expect = old.tree_3d.clone();
        expect.absorb(&new.tree_3d);
        assert_eq!(m.tree_3d.canonical(), expect.canonical());
        assert_eq!(m.tree_2d.canonical(), new.tree_2d.canonical());
        assert_eq!(m.meta.sampling.samples, 15);
        assert_eq!(m.meta.sampling.started, "start-10");
        assert_eq!(m.meta.sampling.finished, "end-5");
        assert_eq!(
            m.meta.ranks[1].state.as_deref(),
            Some("S5"),
            "newer rank state"
        );
        assert!(m.meta.threads.is_empty());
        assert_eq!(m.tree_3d.thread_space(), 0);
    }

    #[test]
    fn more_samples_remap_thread_ids_by_rank_and_tid() {
        // Old: (rank 0, tid 100) is id 0, (rank 1, tid 200) is id 1.
        let old = sampled(
            2,
            true,
            &[(0, 100, &["main", "a"]), (1, 200, &["worker", "w"])],
        );
        // New numbers them the other way round and sees a new thread (rank 0, tid 300).
        let new = sampled(
            2,
            true,
            &[
                (1, 200, &["worker", "w"]),
                (0, 300, &["worker", "x"]),
                (0, 100, &["main", "a"]),
            ],
        );
        assert_eq!(new.meta.threads[0].tid, 200);
        let m = merge_more(&old, new);
        let ids: Vec<(u32, u32, u32)> = m
            .meta
            .threads
            .iter()
            .map(|t| (t.id, t.rank, t.tid))
            .collect();
        assert_eq!(ids, vec![(0, 0, 100), (1, 1, 200), (2, 0, 300)]);
        assert_eq!(m.tree_3d.thread_space(), 3);
        assert_eq!(threads_at(&m.tree_3d, &["worker", "w"]), vec![1]);
        assert_eq!(threads_at(&m.tree_3d, &["worker", "x"]), vec![2]);
        assert_eq!(threads_at(&m.tree_3d, &["main", "a"]), vec![0]);
        assert_eq!(threads_at(&m.tree_3d, &["worker"]), vec![1, 2]);
        assert_eq!(threads_at(&m.tree_2d, &["worker", "x"]), vec![2]);
        assert_eq!(m.tree_2d.thread_space(), 3);
        // The merged result survives its own file format.
        let back = StrataResult::from_json(&m.to_json(), "merged").unwrap();
        assert_eq!(back.tree_3d.canonical(), m.tree_3d.canonical());
    }

    #[test]
    fn samples_with_and_without_threads_do_not_mix() {
        let old = sampled(2, false, &[(0, 0, &["main", "a"])]);
        let new = sampled(3, true, &[(0, 100, &["main", "b"])]);
        let m = merge_more(&old, new.clone());
        assert_eq!(m.meta.sampling.samples, 3);
        assert_eq!(m.tree_3d.canonical(), new.tree_3d.canonical());
    }
}
