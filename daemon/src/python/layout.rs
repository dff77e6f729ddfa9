//! Where CPython keeps what strata reads, per minor version: offsets into the runtime
//! state, interpreter and thread states, frames, code objects, strings and bytes, as the
//! interpreter's own headers place them on x86-64.
//!
//! Every number here was printed by `tests/python/offsets.c` compiled against that
//! version's headers, and `tests/python_cli.rs` compares the table with the headers of
//! every CPython the test machine has: a layout is verified for the versions that check
//! covers. A version without a layout is refused per process ("Python 3.x layout not
//! verified"), never guessed: a wrong offset reads plausible garbage.

/// Offsets for one CPython minor version (bytes from the start of each structure).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub minor: u32,
    pub runtime: RuntimeLayout,
    pub interp: InterpLayout,
    pub tstate: ThreadLayout,
    pub frame: FrameLayout,
    pub code: CodeLayout,
    pub strings: StringLayout,
    pub objects: ObjectLayout,
}

/// `_PyRuntimeState` (the `_PyRuntime` symbol).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuntimeLayout {
    /// `interpreters.head`: the first `PyInterpreterState`.
    pub interpreters_head: u64,
    /// Up to 3.11 the GIL is the runtime's: `ceval.gil.last_holder` and `.locked`. From
    /// 3.12 each interpreter points to its own ([`InterpLayout::gil`]).
    pub gil: Option<GilLayout>,
}

/// The GIL's state: the thread state that last held it, and whether it is held.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GilLayout {
    pub last_holder: u64,
    pub locked: u64,
}

/// `PyInterpreterState`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InterpLayout {
    pub next: u64,
    /// `tstate_head` (3.9, 3.10) or `threads.head`.
    pub threads_head: u64,
    /// 3.12+: `ceval.gil`, a pointer to a `_gil_runtime_state` laid out by the pair.
    pub gil: Option<(u64, GilLayout)>,
    /// `modules` (`imports.modules` from 3.12): `sys.modules`, a dict.
    pub modules: u64,
}

/// `PyThreadState`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadLayout {
    pub next: u64,
    pub interp: u64,
    /// `thread_id`: the thread's `pthread_t` (on glibc, its thread pointer, `fs_base`).
    pub thread_id: u64,
    /// `native_thread_id` (3.11+): the kernel's thread id.
    pub native_thread_id: Option<u64>,
    /// How to get from the thread state to its innermost frame.
    pub current_frame: CurrentFrame,
}

/// Where a thread state keeps its innermost frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CurrentFrame {
    /// `tstate->frame` (3.9, 3.10: a `PyFrameObject`).
    Direct(u64),
    /// `tstate->cframe->current_frame` (3.11, 3.12).
    ThroughCFrame { cframe: u64, current_frame: u64 },
}

/// A frame: `PyFrameObject` up to 3.10, `_PyInterpreterFrame` from 3.11.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameLayout {
    /// `f_code` (`f_executable` in 3.13: it may be something else than code).
    pub code: u64,
    /// `f_back` (3.9, 3.10) or `previous`.
    pub previous: u64,
    /// Where the frame is in its code.
    pub position: Position,
    /// How the frames one evaluator call runs are delimited.
    pub entry: Entry,
    /// `f_localsplus` / `localsplus`: the fast locals.
    pub localsplus: u64,
    /// `f_globals`: the module's namespace, a dict.
    pub globals: u64,
}

/// How a frame says which instruction it is at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Position {
    /// `f_lasti`, an `int`: the last instruction's offset in bytes (3.9) or in 16-bit
    /// code units (3.10), -1 before the first.
    Lasti { offset: u64, in_code_units: bool },
    /// A pointer into the code object's instructions (`co_code_adaptive`): `prev_instr`
    /// (3.11, 3.12: the unit before the next instruction) or `instr_ptr` (3.13).
    Pointer(u64),
}

/// Which frame is the first (outermost) one an evaluator call (`_PyEval_EvalFrameDefault`)
/// runs: that call's C frame stands for it and the frames it called without a C call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry {
    /// One evaluator call per frame (3.9, 3.10).
    EveryFrame,
    /// `is_entry`, a `bool` (3.11).
    IsEntry(u64),
    /// The evaluator pushes a shim frame owned by the C stack (`owner ==
    /// FRAME_OWNED_BY_CSTACK`, a `char`) below the first frame it runs (3.12+).
    CStackShim { owner: u64, cstack: u8 },
}

/// `PyCodeObject`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodeLayout {
    pub filename: u64,
    pub name: u64,
    /// `co_qualname` (3.11+): `Class.method`.
    pub qualname: Option<u64>,
    pub firstlineno: u64,
    /// `co_lnotab` (3.9), `co_linetable` (3.10: PEP 626 pairs; 3.11+: location table).
    pub linetable: u64,
    /// The instructions: `co_code` (a bytes object, 3.9, 3.10) or `co_code_adaptive`
    /// (inline in the code object, 3.11+).
    pub instructions: Instructions,
    /// `co_varnames` (3.9, 3.10) or `co_localsplusnames` (3.11+): the locals' names.
    pub local_names: u64,
    /// 3.9, 3.10: `co_cellvars` and `co_freevars`, whose slots follow the locals' (3.11+
    /// names them all in `local_names`).
    pub cell_names: Option<(u64, u64)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Instructions {
    Bytes(u64),
    Inline(u64),
}

/// `PyBytesObject` and the compact `str` layouts (`PyASCIIObject`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StringLayout {
    pub bytes_size: u64,
    pub bytes_data: u64,
    pub unicode_length: u64,
    pub unicode_state: u64,
    /// Where a compact ASCII string's characters start (`sizeof(PyASCIIObject)`).
    pub ascii_data: u64,
    /// Where a compact non-ASCII string's start (`sizeof(PyCompactUnicodeObject)`).
    pub compact_data: u64,
}

/// The objects a variable read decodes (`--var`): a code object's tuple of local names,
/// and the values strata shows (`int`, `bool`, `float`, `str`, `None`, a closure's cell), and
/// a module's namespace (a dict).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjectLayout {
    /// `PyTupleObject.ob_item`.
    pub tuple_items: u64,
    /// The int's size word: `ob_size` (the digit count, negative for a negative int) up
    /// to 3.11, `long_value.lv_tag` from 3.12 (sign in the low 2 bits, the digit count
    /// above the low 3).
    pub long_size: u64,
    pub long_tagged: bool,
    /// `ob_digit`: 30-bit digits, least significant first (the default build on 64-bit
    /// Linux).
    pub long_digits: u64,
    /// `PyFloatObject.ob_fval`.
    pub float_value: u64,
    /// `PyCellObject.ob_ref`.
    pub cell_ref: u64,
    /// `PyTypeObject.tp_name` and `tp_flags`.
    pub type_name: u64,
    pub type_flags: u64,
    /// `PyDictObject.ma_keys` and `ma_values` (split tables: instances' dicts).
    pub dict_keys: u64,
    pub dict_values: u64,
    /// Where a split dict's values start in what `ma_values` points to (3.13 puts a
    /// header before them).
    pub dict_values_items: u64,
    pub keys: DictKeys,
    /// `PyTypeObject.tp_basicsize` and `tp_dictoffset`.
    pub type_basicsize: u64,
    pub type_dictoffset: u64,
    /// Where an instance keeps its attributes.
    pub instance: InstanceDict,
}

/// Where an instance of a class keeps its attributes (`threading.Thread`'s `_name`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstanceDict {
    /// 3.9, 3.10: a dict at the type's `tp_dictoffset`.
    AtDictOffset,
    /// 3.11+ (`Py_TPFLAGS_MANAGED_DICT`): a dict pointer `dict_before` bytes before the
    /// object, or the attribute values alone, keyed by the class's shared keys
    /// (`PyHeapTypeObject.ht_cached_keys`, at `cached_keys`).
    Managed {
        cached_keys: u64,
        dict_before: u64,
        values: ManagedValues,
    },
}

/// Where a managed-dict instance's values are when it has no dict of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ManagedValues {
    /// 3.11: a pointer this many bytes before the object.
    Before(u64),
    /// 3.12: the dict word itself, odd when it is the values' address less one.
    Tagged,
    /// 3.13 (`Py_TPFLAGS_INLINE_VALUES`): inline after the object (`tp_basicsize`), a
    /// `PyDictValues` whose `valid` byte says they are in use, items at `items`.
    Inline { valid: u64, items: u64 },
}

/// A dict's key table (`PyDictKeysObject`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DictKeys {
    /// 3.9, 3.10: `dk_size` slots, `dk_nentries` entries of (hash, key, value) after the
    /// index table, whose width follows the size. This struct is in `Objects/dict-common.h`,
    /// which CPython does not install: the end-to-end test that reads a module's variable
    /// checks it.
    Sized {
        size: u64,
        nentries: u64,
        indices: u64,
    },
    /// 3.11+: sizes as powers of two, and a kind: general entries (hash, key, value) or
    /// str-keyed ones (key, value).
    Log2 {
        log2_size: u64,
        log2_index_bytes: u64,
        kind: u64,
        nentries: u64,
        indices: u64,
        entry_size: u64,
        unicode_entry_size: u64,
    },
}

/// The objects of 3.9-3.11 (3.12 tags its ints, 3.11 changes the key tables).
const OBJECTS: ObjectLayout = ObjectLayout {
    tuple_items: 24,
    long_size: 16,
    long_tagged: false,
    long_digits: 24,
    float_value: 16,
    cell_ref: 16,
    type_name: 24,
    type_flags: 168,
    dict_keys: 32,
    dict_values: 40,
    dict_values_items: 0,
    type_basicsize: 32,
    type_dictoffset: 288,
    instance: InstanceDict::AtDictOffset,
    keys: DictKeys::Sized {
        size: 8,
        nentries: 32,
        indices: 40,
    },
};

const LOG2_KEYS: DictKeys = DictKeys::Log2 {
    log2_size: 8,
    log2_index_bytes: 9,
    kind: 10,
    nentries: 24,
    indices: 32,
    entry_size: 24,
    unicode_entry_size: 16,
};

/// The bytes object of 3.9-3.13 (unchanged).
const BYTES: (u64, u64) = (16, 32);

const fn strings(ascii_data: u64, compact_data: u64) -> StringLayout {
    StringLayout {
        bytes_size: BYTES.0,
        bytes_data: BYTES.1,
        unicode_length: 16,
        unicode_state: 32,
        ascii_data,
        compact_data,
    }
}

const PY39: Layout = Layout {
    minor: 9,
    runtime: RuntimeLayout {
        interpreters_head: 32,
        gil: Some(GilLayout {
            last_holder: 360,
            locked: 368,
        }),
    },
    interp: InterpLayout {
        next: 0,
        threads_head: 8,
        gil: None,
        modules: 856,
    },
    tstate: ThreadLayout {
        next: 8,
        interp: 16,
        thread_id: 176,
        native_thread_id: None,
        current_frame: CurrentFrame::Direct(24),
    },
    frame: FrameLayout {
        code: 32,
        previous: 24,
        position: Position::Lasti {
            offset: 104,
            in_code_units: false,
        },
        entry: Entry::EveryFrame,
        localsplus: 360,
        globals: 48,
    },
    code: CodeLayout {
        filename: 104,
        name: 112,
        qualname: None,
        firstlineno: 40,
        linetable: 120,
        instructions: Instructions::Bytes(48),
        local_names: 72,
        cell_names: Some((88, 80)),
    },
    strings: strings(48, 72),
    objects: OBJECTS,
};

const PY310: Layout = Layout {
    minor: 10,
    frame: FrameLayout {
        position: Position::Lasti {
            offset: 96,
            in_code_units: true,
        },
        localsplus: 352,
        ..PY39.frame
    },
    ..PY39
};

const PY311: Layout = Layout {
    minor: 11,
    runtime: RuntimeLayout {
        interpreters_head: 40,
        gil: Some(GilLayout {
            last_holder: 368,
            locked: 376,
        }),
    },
    interp: InterpLayout {
        next: 0,
        threads_head: 16,
        gil: None,
        modules: 888,
    },
    tstate: ThreadLayout {
        next: 8,
        interp: 16,
        thread_id: 152,
        native_thread_id: Some(160),
        current_frame: CurrentFrame::ThroughCFrame {
            cframe: 56,
            current_frame: 8,
        },
    },
    frame: FrameLayout {
        code: 32,
        previous: 48,
        position: Position::Pointer(56),
        entry: Entry::IsEntry(68),
        localsplus: 72,
        globals: 8,
    },
    code: CodeLayout {
        filename: 112,
        name: 120,
        qualname: Some(128),
        firstlineno: 72,
        linetable: 136,
        instructions: Instructions::Inline(184),
        local_names: 96,
        cell_names: None,
    },
    strings: strings(48, 72),
    objects: ObjectLayout {
        keys: LOG2_KEYS,
        instance: InstanceDict::Managed {
            cached_keys: 872,
            dict_before: 24,
            values: ManagedValues::Before(32),
        },
        ..OBJECTS
    },
};

const PY312: Layout = Layout {
    minor: 12,
    runtime: RuntimeLayout {
        interpreters_head: 40,
        gil: None,
    },
    interp: InterpLayout {
        next: 0,
        threads_head: 72,
        gil: Some((
            384,
            GilLayout {
                last_holder: 8,
                locked: 16,
            },
        )),
        modules: 944,
    },
    tstate: ThreadLayout {
        next: 8,
        interp: 16,
        thread_id: 136,
        native_thread_id: Some(144),
        current_frame: CurrentFrame::ThroughCFrame {
            cframe: 56,
            current_frame: 0,
        },
    },
    frame: FrameLayout {
        code: 0,
        previous: 8,
        position: Position::Pointer(56),
        entry: Entry::CStackShim {
            owner: 70,
            cstack: 3,
        },
        localsplus: 72,
        globals: 24,
    },
    code: CodeLayout {
        filename: 112,
        name: 120,
        qualname: Some(128),
        firstlineno: 68,
        linetable: 136,
        instructions: Instructions::Inline(192),
        local_names: 96,
        cell_names: None,
    },
    strings: strings(40, 56),
    objects: ObjectLayout {
        long_tagged: true,
        keys: LOG2_KEYS,
        instance: InstanceDict::Managed {
            cached_keys: 880,
            dict_before: 24,
            values: ManagedValues::Tagged,
        },
        ..OBJECTS
    },
};

const PY313: Layout = Layout {
    minor: 13,
    runtime: RuntimeLayout {
        interpreters_head: 632,
        gil: None,
    },
    interp: InterpLayout {
        next: 7264,
        threads_head: 7344,
        gil: Some((
            16,
            GilLayout {
                last_holder: 8,
                locked: 16,
            },
        )),
        modules: 7656,
    },
    tstate: ThreadLayout {
        next: 8,
        interp: 16,
        thread_id: 152,
        native_thread_id: Some(160),
        current_frame: CurrentFrame::Direct(72),
    },
    frame: PY312.frame,
    code: CodeLayout {
        instructions: Instructions::Inline(200),
        ..PY312.code
    },
    strings: strings(40, 56),
    objects: ObjectLayout {
        dict_values_items: 8,
        instance: InstanceDict::Managed {
            cached_keys: 880,
            dict_before: 24,
            values: ManagedValues::Inline { valid: 3, items: 8 },
        },
        ..PY312.objects
    },
};

/// The layouts strata has, oldest first.
pub const LAYOUTS: [Layout; 5] = [PY39, PY310, PY311, PY312, PY313];

impl Layout {
    /// The layout of CPython 3.`minor`, if strata has one.
    pub fn for_minor(minor: u32) -> Option<&'static Layout> {
        LAYOUTS.iter().find(|l| l.minor == minor)
    }

    /// The offsets as `tests/python/offsets.c` names and prints them, for comparing the
    /// two.
    pub fn named_offsets(&self) -> Vec<(&'static str, u64)> {
        let mut v = vec![("runtime.interpreters_head", self.runtime.interpreters_head)];
        if let Some(g) = self.runtime.gil {
            v.push(("runtime.gil_locked", g.locked));
            v.push(("runtime.gil_last_holder", g.last_holder));
        }
        if let Some((at, g)) = self.interp.gil {
            v.push(("interp.gil", at));
            v.push(("gil.locked", g.locked));
            v.push(("gil.last_holder", g.last_holder));
        }
        v.push(("interp.next", self.interp.next));
        v.push(("interp.modules", self.interp.modules));
        v.push(("interp.threads_head", self.interp.threads_head));
        v.push(("tstate.next", self.tstate.next));
        v.push(("tstate.interp", self.tstate.interp));
        v.push(("tstate.thread_id", self.tstate.thread_id));
        if let Some(n) = self.tstate.native_thread_id {
            v.push(("tstate.native_thread_id", n));
        }
        match self.tstate.current_frame {
            CurrentFrame::Direct(at) if self.minor >= 13 => v.push(("tstate.current_frame", at)),
            CurrentFrame::Direct(at) => v.push(("tstate.frame", at)),
            CurrentFrame::ThroughCFrame {
                cframe,
                current_frame,
            } => {
                v.push(("tstate.cframe", cframe));
                v.push(("cframe.current_frame", current_frame));
            }
        }
        let f = &self.frame;
        v.push(("frame.code", f.code));
        match f.position {
            Position::Lasti { offset, .. } => v.push(("frame.lasti", offset)),
            Position::Pointer(at) => v.push(("frame.instr", at)),
        }
        v.push((
            if self.minor >= 11 {
                "frame.previous"
            } else {
                "frame.back"
            },
            f.previous,
        ));
        match f.entry {
            Entry::EveryFrame => {}
            Entry::IsEntry(at) => {
                v.push(("frame.is_entry", at));
                v.push(("frame.owner", at + 1));
            }
            Entry::CStackShim { owner, cstack } => {
                v.push(("frame.owner", owner));
                v.push(("owner.cstack", u64::from(cstack)));
            }
        }
        v.push(("frame.localsplus", f.localsplus));
        v.push(("frame.globals", f.globals));
        let c = &self.code;
        match c.instructions {
            Instructions::Bytes(at) => v.push(("code.code", at)),
            Instructions::Inline(at) => v.push(("code.code_adaptive", at)),
        }
        if let Some(q) = c.qualname {
            v.push(("code.qualname", q));
        }
        v.push(("code.filename", c.filename));
        v.push(("code.name", c.name));
        v.push(("code.firstlineno", c.firstlineno));
        v.push(("code.linetable", c.linetable));
        v.push((
            if self.minor >= 11 {
                "code.localsplusnames"
            } else {
                "code.varnames"
            },
            c.local_names,
        ));
        if let Some((cells, frees)) = c.cell_names {
            v.push(("code.cellvars", cells));
            v.push(("code.freevars", frees));
        }
        let s = &self.strings;
        v.push(("bytes.size", s.bytes_size));
        v.push(("bytes.data", s.bytes_data));
        v.push(("unicode.length", s.unicode_length));
        v.push(("unicode.state", s.unicode_state));
        v.push(("unicode.ascii_data", s.ascii_data));
        v.push(("unicode.compact_data", s.compact_data));
        let o = &self.objects;
        v.push(("tuple.items", o.tuple_items));
        v.push((
            if o.long_tagged {
                "long.tag"
            } else {
                "long.size"
            },
            o.long_size,
        ));
        v.push(("long.digits", o.long_digits));
        v.push(("float.value", o.float_value));
        v.push(("cell.ref", o.cell_ref));
        v.push(("type.name", o.type_name));
        v.push(("type.flags", o.type_flags));
        v.push(("dict.keys", o.dict_keys));
        v.push(("dict.values", o.dict_values));
        // 3.9's and 3.10's key tables are not in the installed headers (see
        // [`DictKeys::Sized`]).
        if let DictKeys::Log2 {
            log2_size,
            log2_index_bytes,
            kind,
            nentries,
            indices,
            entry_size,
            unicode_entry_size,
        } = o.keys
        {
            v.push(("keys.log2_size", log2_size));
            v.push(("keys.log2_index_bytes", log2_index_bytes));
            v.push(("keys.kind", kind));
            v.push(("keys.nentries", nentries));
            v.push(("keys.indices", indices));
            v.push(("keys.entry_size", entry_size));
            v.push(("keys.unicode_entry_size", unicode_entry_size));
        }
        v.push(("type.basicsize", o.type_basicsize));
        v.push(("type.dictoffset", o.type_dictoffset));
        if let InstanceDict::Managed {
            cached_keys,
            dict_before,
            values,
        } = o.instance
        {
            v.push(("heaptype.cached_keys", cached_keys));
            v.push(("object.managed_dict_before", dict_before));
            match values {
                ManagedValues::Before(at) => v.push(("object.values_before", at)),
                ManagedValues::Tagged => {}
                ManagedValues::Inline { valid, items } => {
                    v.push(("dictvalues.values", items));
                    v.push(("dictvalues.valid", valid));
                }
            }
        }
        v
    }
}
