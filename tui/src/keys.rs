//! The key map as data: the help panel, the footer and the keys table of `docs/CLI.md`
//! are all drawn from [`KEYS`] (a test keeps the document equal to it), so what the user
//! reads is what the code does.

/// One entry of the help panel.
#[derive(Clone, Copy, Debug)]
pub struct KeyHelp {
    /// The keys, as a user types them.
    pub keys: &'static str,
    /// What they do.
    pub what: &'static str,
}

const fn k(keys: &'static str, what: &'static str) -> KeyHelp {
    KeyHelp { keys, what }
}

/// Every key, in the order of the help panel, by section.
pub const KEYS: &[(&str, &[KeyHelp])] = &[
    (
        "Move",
        &[
            k("Up Down, k j", "previous / next line"),
            k("PgUp PgDn, Home End", "a page up / down, first / last line"),
            k("Left, h", "collapse the node, or go to its parent"),
            k("Right, l", "expand the node, or go to its first child"),
            k("Enter, Space", "expand or collapse the node"),
            k("e", "expand the node's whole subtree"),
        ],
    ),
    (
        "View (u undoes each)",
        &[
            k("f", "focus on the node's subtree (its path as a header)"),
            k("F", "unfocus"),
            k("c", "cut below MPI calls on / off (on at start)"),
            k("s", "full stacks on / off (every frame and thread)"),
            k("x", "cut below frames matching a regex (empty: none)"),
            k("g", "granularity: function, line, module"),
            k("d", "2D tree (last sample) / 3D tree (all samples)"),
            k("u", "undo the last view change"),
        ],
    ),
    (
        "Find",
        &[
            k("/", "search function text (regex, any case)"),
            k("n N", "next / previous match"),
            k("#", "find a rank (its deepest node)"),
            k("@", "find a host (where its ranks end)"),
            k("Tab, Shift-Tab", "next / previous equivalence class"),
            k("C", "class list on / off"),
            k("p", "progress order on / off; go to the least progressed"),
            k("P", "the progress order: classes and why"),
            k("w", "why it hangs: go to the ranks it names (again: next)"),
            k("W", "why it hangs: the verdict and its evidence"),
            k("a", "MPI histories: ranks behind or abnormal (again: next)"),
            k("[ ]", "leaf with the shortest / longest path"),
            k("< >", "leaf with the least / most tasks"),
        ],
    ),
    (
        "Inspect",
        &[
            k("i", "the node's ranks: host, pid, state, error"),
            k("K", "full stacks of the node's lowest rank"),
            k("v", "a variable of the node's function in its ranks"),
            k("o", "source lines around the node's frame"),
            k("G", "debugger command for the node's class (Enter runs it)"),
        ],
    ),
    (
        "Live session (strata attach -i)",
        &[
            k("r", "sample again"),
            k("+", "take N more samples and merge them"),
            k("t", "threads on / off, then sample again"),
            k("D", "detach (the last result stays)"),
        ],
    ),
    (
        "Other",
        &[
            k("?", "help: this list of keys"),
            k("Esc", "close a panel or prompt; clear the search"),
            k("q, Ctrl-C", "quit (a live session detaches first)"),
        ],
    ),
];

/// The keys the footer shows when there is nothing else to say.
pub const FOOTER: &str =
    "?:help q:quit /:search Tab:class w:why f:focus c:cut g:gran d:2D/3D i:info G:gdb";
