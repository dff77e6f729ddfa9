//! The progress order as a user reads it: the classes least progressed first, with the
//! evidence for every order (and for every order strata refused to guess), as text for the
//! terminal and `progress.txt`, and as JSON for scripts (`progress.json`).

use super::loops::Loops;
use super::lov::Direction;
use super::order::{BranchPoint, Evidence, Group, IterationFact, ProgressClass, ProgressOrder};
use super::point::{ProgramPoint, Relation};
use serde::Serialize;
use strata_filters::Frame;
use strata_filters::taskset::format_set;
use strata_result::annotation::{Annotation, Label};
use strata_result::render::count_label;
use strata_result::render::frame_text;

/// Pairs explained per branching point before the rest are summarised (a node with a
/// hundred children has thousands of pairs).
const MAX_PAIRS: usize = 12;

/// Why groups at one level were left unordered, for the class list.
fn tie_kind(bp: &BranchPoint, i: usize) -> Option<&'static str> {
    let g = &bp.groups[i];
    if g.tag.tie == 0 {
        return None;
    }
    let mut kind = None;
    for (j, other) in bp.groups.iter().enumerate() {
        if j == i || other.tag.level != g.tag.level {
            continue;
        }
        let k = match bp.relation(i, j)? {
            Evidence::Source(Relation::NeedsIteration { .. })
            | Evidence::Iterations {
                then: Some(Relation::NeedsIteration { .. }),
                ..
            } => "needs loop variable",
            Evidence::Source(Relation::Incomparable { .. })
            | Evidence::Iterations {
                then: Some(Relation::Incomparable { .. }),
                ..
            } => "incomparable",
            _ => "unordered",
        };
        // The most specific reason wins: a loop variable would order them.
        kind = Some(match (kind, k) {
            (Some("needs loop variable"), _) | (_, "needs loop variable") => "needs loop variable",
            (Some("incomparable"), _) | (_, "incomparable") => "incomparable",
            _ => k,
        });
    }
    kind
}

/// The text of the progress order: classes, least progressed first, then the evidence.
pub fn text(order: &ProgressOrder, max_list: usize) -> String {
    let mut out = String::new();
    out.push_str(
        "Progress order (least progressed first; 2D tree at line level, by position in the code):\n",
    );
    if order.classes.is_empty() {
        out.push_str("  (no stack traces)\n");
        return out;
    }
    if !order.has_order() {
        out.push_str("  every sampled rank is at the same place: nothing to order\n");
    }
    let labels: Vec<String> = order.classes.iter().map(|c| c.label.to_string()).collect();
    let sets: Vec<String> = order
        .classes
        .iter()
        .map(|c| count_label(&c.tasks, max_list))
        .collect();
    let lw = labels.iter().map(|l| l.len()).max().unwrap_or(0);
    let sw = sets.iter().map(|s| s.chars().count()).max().unwrap_or(0);
    for (i, c) in order.classes.iter().enumerate() {
        let mut line = format!(
            "  {:lw$}  {}{}  {}",
            labels[i],
            sets[i],
            " ".repeat(sw - sets[i].chars().count()),
            class_where(order, c)
        );
        if let Some(kind) = class_tie_kind(order, c) {
            line.push_str(&format!("  ({kind})"));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push_str(&format!("{}\n", least_progressed(order)));
    if order.has_order() {
        out.push_str("\nWhy:\n");
        for bp in &order.branch_points {
            out.push_str(&branch_text(bp, &order.loops));
        }
    }
    if !order.notes.is_empty() {
        out.push_str("\nSource notes:\n");
        for n in &order.notes {
            out.push_str(&format!("  {n}\n"));
        }
    }
    out
}

/// The one class behind every other, by code order and loop counters; `Err` with why there
/// is none (no rank sampled, every rank at one place, minimal classes unordered).
pub fn least_progressed_class(
    order: &ProgressOrder,
) -> Result<&ProgressClass, Vec<&ProgressClass>> {
    let Some(first) = order.classes.first() else {
        return Err(Vec::new());
    };
    if !order.has_order() {
        return Err(order.classes.iter().collect());
    }
    // Classes that share the first class's level at every branching point are as far
    // behind as it is, as far as the code shows.
    let first_rank = |l: &Label| l.0.iter().map(|t| t.level).collect::<Vec<_>>();
    let tied: Vec<&ProgressClass> = order
        .classes
        .iter()
        .filter(|c| first_rank(&c.label) == first_rank(&first.label))
        .collect();
    if tied.len() == 1 {
        Ok(first)
    } else {
        Err(tied)
    }
}

/// One line naming the least progressed ranks, or saying why there is no single answer.
pub fn least_progressed(order: &ProgressOrder) -> String {
    match least_progressed_class(order) {
        Ok(first) => format!(
            "Least progressed: {} ({} rank{} [{}])",
            first.label,
            first.tasks.len(),
            if first.tasks.len() == 1 { "" } else { "s" },
            format_set(&first.tasks)
        ),
        Err(tied) if tied.is_empty() => "Least progressed: no ranks were sampled".into(),
        Err(_) if !order.has_order() => {
            "Least progressed: not decided: every rank is at the same place (see the notes \
             for loops whose counters could tell them apart)"
                .into()
        }
        Err(tied) => {
            let names: Vec<String> = tied.iter().map(|c| c.label.to_string()).collect();
            format!(
                "Least progressed: not decided by the code alone: {} are unordered (see why)",
                names.join(", ")
            )
        }
    }
}

fn class_tie_kind(order: &ProgressOrder, c: &ProgressClass) -> Option<&'static str> {
    // The deepest branching point on the class's path that gave it a tie decides.
    let mut kind = None;
    for bp in &order.branch_points {
        if !c.label.0.starts_with(&bp.label.0) || c.label.0.len() <= bp.label.0.len() {
            continue;
        }
        let tag = c.label.0[bp.label.0.len()];
        if let Some(i) = bp.groups.iter().position(|g| g.tag == tag)
            && let Some(k) = tie_kind(bp, i)
        {
            kind = Some(k);
        }
    }
    kind
}

/// Where a class is: from the frame where it parted from the others to its innermost frame.
fn class_where(order: &ProgressOrder, c: &ProgressClass) -> String {
    let tree = &order.tree;
    let path = tree.path(c.node);
    // The deepest branching point above (or at) the class's node.
    let start = path
        .iter()
        .rposition(|&n| {
            order
                .branch_points
                .iter()
                .any(|bp| bp.node == n && bp.node != c.node)
        })
        .map_or(0, |i| i + 1);
    let frames: Vec<String> = path[start.min(path.len())..]
        .iter()
        .filter_map(|&n| tree.node_frame(n))
        .map(frame_text)
        .collect();
    let frames = if frames.is_empty() {
        // The class ends at a branching node itself.
        tree.node_frame(c.node)
            .map(|f| vec![format!("{} (itself)", frame_text(f))])
            .unwrap_or_default()
    } else {
        frames
    };
    if frames.len() > 4 {
        format!(
            "{} > {} > … > {}",
            frames[0],
            frames[1],
            frames[frames.len() - 1]
        )
    } else {
        frames.join(" > ")
    }
}

fn branch_text(bp: &BranchPoint, loops: &Loops) -> String {
    let at = bp
        .frame
        .as_ref()
        .map_or("the outermost frame".to_string(), frame_text);
    let mut out = if bp.label.is_empty() {
        format!("  below {at}:\n")
    } else {
        format!("  below {at} (within {}):\n", bp.label)
    };
    let name = |g: &Group| bp.label_of(g).to_string();
    if bp.relations.is_empty() {
        out.push_str(&format!(
            "    {} groups, too many to compare pairwise: left unordered\n",
            bp.groups.len()
        ));
        return out;
    }
    // (before, after) pairs that explain a level, then the pairs that share one; only the
    // first MAX_PAIRS are explained (a node with many children has very many pairs).
    let mut pairs: Vec<(usize, usize, &str)> = Vec::new();
    for (j, g) in bp.groups.iter().enumerate() {
        if g.tag.level > 1
            && let Some(i) = (0..bp.groups.len()).find(|&i| {
                bp.groups[i].tag.level + 1 == g.tag.level
                    && bp.relation(i, j).is_some_and(Evidence::is_before)
            })
        {
            pairs.push((i, j, "before"));
        }
    }
    for i in 0..bp.groups.len() {
        for j in i + 1..bp.groups.len() {
            if bp.groups[i].tag.level == bp.groups[j].tag.level {
                pairs.push((i, j, "and"));
            }
        }
    }
    for &(i, j, word) in pairs.iter().take(MAX_PAIRS) {
        let e = bp.relation(i, j).expect("compared");
        out.push_str(&format!(
            "    {} {word} {}: {}\n",
            name(&bp.groups[i]),
            name(&bp.groups[j]),
            explain(&bp.groups[i], &bp.groups[j], e, loops)
        ));
    }
    if pairs.len() > MAX_PAIRS {
        out.push_str(&format!(
            "    … {} more pairs (progress.json has them all)\n",
            pairs.len() - MAX_PAIRS
        ));
    }
    out
}

fn short_file(f: &str) -> &str {
    f.rsplit('/').next().unwrap_or(f)
}

fn line_of(g: &Group) -> Option<u32> {
    g.frame.as_ref().and_then(Frame::code).and_then(|c| c.line)
}

fn function_of(g: &Group) -> String {
    g.frame.as_ref().map_or("?".into(), |f| f.name())
}

/// Why `a` and `b` compare as `e` (a's view).
fn explain(a: &Group, b: &Group, e: &Evidence, loops: &Loops) -> String {
    // "In the same iteration" reads best from the one that would be behind.
    if let Evidence::Source(Relation::NeedsIteration {
        if_same_iteration, ..
    }) = e
        && **if_same_iteration == Relation::After
    {
        return explain(b, a, &e.reversed(), loops);
    }
    if e.reversed().is_before() {
        return explain(b, a, &e.reversed(), loops);
    }
    let (la, lb) = (line_of(a), line_of(b));
    let lines = match (la, lb) {
        (Some(x), Some(y)) => format!("line {x} {{}} line {y}"),
        _ => "{}".into(),
    };
    let file = |p: &ProgramPoint| short_file(&p.file).to_string();
    let full = a.point.as_ref().map(|p| p.file.clone()).unwrap_or_default();
    let at = Place {
        lines: &lines,
        function: &function_of(a),
        file: &a.point.as_ref().map(file).unwrap_or_default(),
        full: &full,
        loops,
    };
    match e {
        Evidence::Source(r) => relation_text(r, &at),
        Evidence::Iterations { facts, then } => iterations_text(facts, then.as_ref(), &at),
        Evidence::LineNumbers(o) => format!(
            "{} in {} by line number only (the source was not read: see the notes)",
            lines.replace(
                "{}",
                match o {
                    std::cmp::Ordering::Less => "comes before",
                    std::cmp::Ordering::Greater => "comes after",
                    std::cmp::Ordering::Equal => "is the same line as",
                }
            ),
            function_of(a)
        ),
        Evidence::Unordered(why) => format!("unordered: {why}"),
    }
}

/// Where a comparison happened, for the words that explain it.
struct Place<'a> {
    /// `line X {} line Y`, the verb left open.
    lines: &'a str,
    function: &'a str,
    /// The file's name, and its path (to find the loops).
    file: &'a str,
    full: &'a str,
    loops: &'a Loops,
}

fn iterations_text(facts: &[IterationFact], then: Option<&Relation>, at: &Place) -> String {
    let fact = |f: &IterationFact| {
        format!(
            "{} = {} and {} in the {} loop at {}:{}{}",
            f.variable,
            f.values.0,
            f.values.1,
            f.kind,
            short_file(&f.file),
            f.line,
            if f.adjusted {
                " (as each iteration began: one of them is past the update)"
            } else {
                ""
            }
        )
    };
    let Some(last) = facts.last() else {
        return then.map_or(String::new(), |r| relation_text(r, at));
    };
    if last.values.0 != last.values.1 {
        let outer: Vec<String> = facts[..facts.len() - 1]
            .iter()
            .map(|f| format!("{} = {}", f.variable, f.values.0))
            .collect();
        let outer = if outer.is_empty() {
            String::new()
        } else {
            format!(" (same iteration of the outer loop: {})", outer.join(", "))
        };
        return match last.direction {
            Direction::Increasing => format!(
                "an earlier iteration: {}, and {} counts up{outer}",
                fact(last),
                last.variable
            ),
            Direction::Decreasing => format!(
                "an earlier iteration: {}, and {} counts down{outer}",
                fact(last),
                last.variable
            ),
            Direction::Unknown => format!(
                "unordered: different iterations ({}), but whether {} counts up or down is not known{outer}",
                fact(last),
                last.variable
            ),
        };
    }
    let same: Vec<String> = facts
        .iter()
        .map(|f| {
            format!(
                "{} = {} ({} loop at {}:{})",
                f.variable,
                f.values.0,
                f.kind,
                short_file(&f.file),
                f.line
            )
        })
        .collect();
    match then {
        Some(Relation::Same) | None => format!(
            "unordered: the same iteration ({}) and the same line",
            same.join(", ")
        ),
        Some(r) => format!(
            "in the same iteration ({}): {}",
            same.join(", "),
            relation_text(r, at)
        ),
    }
}

fn relation_text(r: &Relation, at: &Place) -> String {
    let (lines, function, file) = (at.lines, at.function, at.file);
    match r {
        Relation::Before => format!(
            "{} in {function} ({file})",
            lines.replace("{}", "comes before")
        ),
        Relation::After => format!(
            "{} in {function} ({file})",
            lines.replace("{}", "comes after")
        ),
        Relation::Same => "the same program point".into(),
        Relation::Incomparable { line, kind, arms } => format!(
            "incomparable: different branches of the {kind} at {file}:{line} (arms {} and {}); only one of them runs",
            arms.0, arms.1
        ),
        Relation::NeedsIteration {
            line,
            kind,
            if_same_iteration,
        } => {
            let same = match if_same_iteration.as_ref() {
                Relation::Before | Relation::After => format!(
                    "; in the same iteration {}",
                    relation_text(if_same_iteration, at)
                ),
                Relation::Incomparable { .. } => {
                    "; in the same iteration they are in different branches".into()
                }
                _ => String::new(),
            };
            let why = at.loops.get(at.full, *line).map_or(
                "its loop-order variable was not looked for".to_string(),
                |c| {
                    c.missing().unwrap_or_else(|| {
                        format!(
                            "{}:{} has no value for some of these ranks (see the notes)",
                            c.function,
                            c.variable().unwrap_or("?")
                        )
                    })
                },
            );
            format!(
                "needs a loop variable: both are in the {kind} loop at {file}:{line} and which is behind depends on the iteration each is in{same} ({why})"
            )
        }
        Relation::Unrelated(why) => format!("unordered: {why}"),
    }
}

/// `progress.json`: the same facts for scripts.
#[derive(Debug, Serialize)]
pub struct ProgressJson {
    pub format: &'static str,
    pub version: u32,
    pub least_progressed: String,
    pub classes: Vec<ClassJson>,
    pub branch_points: Vec<BranchJson>,
    pub notes: Vec<String>,
    /// Other analyses' fields (the verdict's `verdict` object), after the order's own.
    #[serde(flatten)]
    pub analyses: std::collections::BTreeMap<&'static str, serde_json::Value>,
}

#[derive(Debug, Serialize)]
pub struct ClassJson {
    pub label: String,
    pub ranks: String,
    pub count: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unordered: Option<&'static str>,
    pub frames: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct BranchJson {
    pub label: String,
    pub at: Option<String>,
    pub groups: Vec<GroupJson>,
    /// Every pair, `[i, j, evidence]` for i < j (group indices as in `groups`).
    pub pairs: Vec<PairJson>,
}

#[derive(Debug, Serialize)]
pub struct GroupJson {
    pub label: String,
    pub ranks: String,
    pub frame: Option<String>,
    pub point: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_point: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct PairJson {
    pub first: String,
    pub second: String,
    /// `before`, `after`, `same`, `incomparable`, `needs-loop-variable`, `unordered`.
    pub order: &'static str,
    pub why: String,
}

fn order_word(e: &Evidence) -> &'static str {
    match e {
        Evidence::Source(Relation::Before) | Evidence::LineNumbers(std::cmp::Ordering::Less) => {
            "before"
        }
        Evidence::Source(Relation::After) | Evidence::LineNumbers(std::cmp::Ordering::Greater) => {
            "after"
        }
        Evidence::Source(Relation::Same) | Evidence::LineNumbers(std::cmp::Ordering::Equal) => {
            "same"
        }
        Evidence::Source(Relation::Incomparable { .. }) => "incomparable",
        Evidence::Source(Relation::NeedsIteration { .. }) => "needs-loop-variable",
        Evidence::Source(Relation::Unrelated(_)) | Evidence::Unordered(_) => "unordered",
        Evidence::Iterations { .. } if e.is_before() => "before",
        Evidence::Iterations { .. } if e.reversed().is_before() => "after",
        Evidence::Iterations {
            then: Some(Relation::NeedsIteration { .. }),
            ..
        } => "needs-loop-variable",
        Evidence::Iterations {
            then: Some(Relation::Incomparable { .. }),
            ..
        } => "incomparable",
        Evidence::Iterations { .. } => "unordered",
    }
}

/// The JSON form of `order`.
pub fn json(order: &ProgressOrder) -> ProgressJson {
    let classes = order
        .classes
        .iter()
        .map(|c| ClassJson {
            label: c.label.to_string(),
            ranks: format_set(&c.tasks),
            count: c.tasks.len(),
            unordered: class_tie_kind(order, c),
            frames: order
                .tree
                .path_frames(c.node)
                .iter()
                .map(frame_text)
                .collect(),
        })
        .collect();
    let branch_points = order
        .branch_points
        .iter()
        .map(|bp| {
            let mut pairs = Vec::new();
            for i in 0..bp.groups.len() {
                for j in i + 1..bp.groups.len() {
                    let Some(e) = bp.relation(i, j) else {
                        continue;
                    };
                    pairs.push(PairJson {
                        first: bp.label_of(&bp.groups[i]).to_string(),
                        second: bp.label_of(&bp.groups[j]).to_string(),
                        order: order_word(e),
                        why: explain(&bp.groups[i], &bp.groups[j], e, &order.loops),
                    });
                }
            }
            BranchJson {
                label: bp.label.to_string(),
                at: bp.frame.as_ref().map(frame_text),
                groups: bp
                    .groups
                    .iter()
                    .map(|g| GroupJson {
                        label: bp.label_of(g).to_string(),
                        ranks: format_set(&g.tasks),
                        frame: g.frame.as_ref().map(frame_text),
                        point: g.point.as_ref().ok().map(|p| p.to_string()),
                        no_point: g.point.as_ref().err().cloned(),
                    })
                    .collect(),
                pairs,
            }
        })
        .collect();
    ProgressJson {
        format: "strata-progress",
        version: 1,
        least_progressed: least_progressed(order),
        classes,
        branch_points,
        notes: order.notes.clone(),
        analyses: std::collections::BTreeMap::new(),
    }
}

/// [`json`] as pretty-printed text with a final newline.
pub fn json_text(order: &ProgressOrder) -> String {
    json_text_with(order, &[])
}

/// [`json_text`] with other analyses' top-level fields (the verdict's `verdict` object),
/// after the order's own.
pub fn json_text_with(
    order: &ProgressOrder,
    fields: &[(&'static str, serde_json::Value)],
) -> String {
    let mut file = json(order);
    file.analyses.extend(fields.iter().cloned());
    let mut s = serde_json::to_string_pretty(&file).expect("plain data serializes");
    s.push('\n');
    s
}

/// The progress order with other analyses' fields in its `progress.json` (the verdict's,
/// so that a script reading the order reads the answer too).
#[derive(Debug)]
pub struct WithFields<'a> {
    pub order: &'a ProgressOrder,
    pub fields: Vec<(&'static str, serde_json::Value)>,
}

impl Annotation for WithFields<'_> {
    fn node_labels(
        &self,
        tree: &strata_filters::PrefixTree<strata_filters::RankSet>,
    ) -> Option<Vec<Option<Label>>> {
        Some(ProgressOrder::node_labels(self.order, tree))
    }
    fn report_text(&self, max_list: usize) -> String {
        text(self.order, max_list)
    }
    fn files(&self) -> Vec<(&'static str, String)> {
        vec![
            (PROGRESS_TEXT_FILE, text(self.order, usize::MAX)),
            (PROGRESS_JSON_FILE, json_text_with(self.order, &self.fields)),
        ]
    }
}

/// The progress order as text (with `--progress`), in a result directory.
pub const PROGRESS_TEXT_FILE: &str = "progress.txt";
/// The progress order as JSON (with `--progress`), in a result directory.
pub const PROGRESS_JSON_FILE: &str = "progress.json";

/// The progress order draws on every rendering: `f@[T1.2]` labels, branches least
/// progressed first, its report after the classes and its two files in a result directory.
impl Annotation for ProgressOrder {
    fn node_labels(
        &self,
        tree: &strata_filters::PrefixTree<strata_filters::RankSet>,
    ) -> Option<Vec<Option<Label>>> {
        Some(ProgressOrder::node_labels(self, tree))
    }
    fn report_text(&self, max_list: usize) -> String {
        text(self, max_list)
    }
    fn files(&self) -> Vec<(&'static str, String)> {
        vec![
            (PROGRESS_TEXT_FILE, text(self, usize::MAX)),
            (PROGRESS_JSON_FILE, json_text(self)),
        ]
    }
}
