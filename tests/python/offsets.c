/* Prints the offsets strata's CPython layouts hold (daemon/src/python/layout.rs), read from
 * the interpreter's own headers, one "name value" per line. tests/python_layout.rs compiles
 * it against every CPython it finds and compares: a layout is "verified" for a version only
 * where this agrees with the table.
 *
 *   gcc -I$(python3 -c 'import sysconfig;print(sysconfig.get_path("include"))') \
 *       -o offsets tests/python/offsets.c && ./offsets
 */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>
#if PY_VERSION_HEX >= 0x030B0000
#include "internal/pycore_frame.h"
#else
#include <frameobject.h>
#include <longintrepr.h>
#endif
#include "internal/pycore_interp.h"
#include "internal/pycore_runtime.h"
#if PY_VERSION_HEX >= 0x030C0000
#include "internal/pycore_gil.h"
#endif
#if PY_VERSION_HEX >= 0x030B0000
#include "internal/pycore_dict.h"
#endif
#if PY_VERSION_HEX >= 0x030B0000
#include "internal/pycore_object.h"
#endif

#define P(name, value) printf("%s %lu\n", name, (unsigned long)(value))

int main(void) {
    P("version_hex", PY_VERSION_HEX);
    P("runtime.interpreters_head", offsetof(_PyRuntimeState, interpreters.head));
#if PY_VERSION_HEX < 0x030C0000
    P("runtime.gil_locked", offsetof(_PyRuntimeState, ceval.gil.locked));
    P("runtime.gil_last_holder", offsetof(_PyRuntimeState, ceval.gil.last_holder));
#else
    P("interp.gil", offsetof(PyInterpreterState, ceval.gil));
    P("gil.locked", offsetof(struct _gil_runtime_state, locked));
    P("gil.last_holder", offsetof(struct _gil_runtime_state, last_holder));
#endif
    P("interp.next", offsetof(PyInterpreterState, next));
#if PY_VERSION_HEX >= 0x030B0000
    P("interp.threads_head", offsetof(PyInterpreterState, threads.head));
#else
    P("interp.threads_head", offsetof(PyInterpreterState, tstate_head));
#endif
    P("tstate.next", offsetof(PyThreadState, next));
    P("tstate.interp", offsetof(PyThreadState, interp));
    P("tstate.thread_id", offsetof(PyThreadState, thread_id));
#if PY_VERSION_HEX >= 0x030B0000
    P("tstate.native_thread_id", offsetof(PyThreadState, native_thread_id));
#endif
#if PY_VERSION_HEX >= 0x030D0000
    P("tstate.current_frame", offsetof(PyThreadState, current_frame));
#elif PY_VERSION_HEX >= 0x030B0000
    P("tstate.cframe", offsetof(PyThreadState, cframe));
    P("cframe.current_frame", offsetof(_PyCFrame, current_frame));
#else
    P("tstate.frame", offsetof(PyThreadState, frame));
#endif
#if PY_VERSION_HEX >= 0x030B0000
#if PY_VERSION_HEX >= 0x030D0000
    P("frame.code", offsetof(_PyInterpreterFrame, f_executable));
    P("frame.instr", offsetof(_PyInterpreterFrame, instr_ptr));
#else
    P("frame.code", offsetof(_PyInterpreterFrame, f_code));
    P("frame.instr", offsetof(_PyInterpreterFrame, prev_instr));
#endif
    P("frame.previous", offsetof(_PyInterpreterFrame, previous));
    P("frame.owner", offsetof(_PyInterpreterFrame, owner));
    P("frame.localsplus", offsetof(_PyInterpreterFrame, localsplus));
    P("frame.globals", offsetof(_PyInterpreterFrame, f_globals));
#if PY_VERSION_HEX >= 0x030C0000
    P("owner.cstack", FRAME_OWNED_BY_CSTACK);
#else
    P("frame.is_entry", offsetof(_PyInterpreterFrame, is_entry));
#endif
    P("code.code_adaptive", offsetof(PyCodeObject, co_code_adaptive));
    P("code.qualname", offsetof(PyCodeObject, co_qualname));
#else
    P("frame.back", offsetof(PyFrameObject, f_back));
    P("frame.code", offsetof(PyFrameObject, f_code));
    P("frame.lasti", offsetof(PyFrameObject, f_lasti));
    P("frame.localsplus", offsetof(PyFrameObject, f_localsplus));
    P("frame.globals", offsetof(PyFrameObject, f_globals));
    P("code.code", offsetof(PyCodeObject, co_code));
#endif
    P("code.filename", offsetof(PyCodeObject, co_filename));
    P("code.name", offsetof(PyCodeObject, co_name));
    P("code.firstlineno", offsetof(PyCodeObject, co_firstlineno));
#if PY_VERSION_HEX >= 0x030A0000
    P("code.linetable", offsetof(PyCodeObject, co_linetable));
#else
    P("code.linetable", offsetof(PyCodeObject, co_lnotab));
#endif
#if PY_VERSION_HEX >= 0x030B0000
    P("code.localsplusnames", offsetof(PyCodeObject, co_localsplusnames));
#else
    P("code.varnames", offsetof(PyCodeObject, co_varnames));
    P("code.cellvars", offsetof(PyCodeObject, co_cellvars));
    P("code.freevars", offsetof(PyCodeObject, co_freevars));
#endif
    P("bytes.size", offsetof(PyVarObject, ob_size));
    P("bytes.data", offsetof(PyBytesObject, ob_sval));
    P("unicode.length", offsetof(PyASCIIObject, length));
    P("unicode.state", offsetof(PyASCIIObject, state));
    P("unicode.ascii_data", sizeof(PyASCIIObject));
    P("unicode.compact_data", sizeof(PyCompactUnicodeObject));
    /* What a variable read decodes. */
    P("tuple.items", offsetof(PyTupleObject, ob_item));
#if PY_VERSION_HEX >= 0x030C0000
    P("long.tag", offsetof(PyLongObject, long_value.lv_tag));
    P("long.digits", offsetof(PyLongObject, long_value.ob_digit));
#else
    P("long.size", offsetof(PyVarObject, ob_size));
    P("long.digits", offsetof(PyLongObject, ob_digit));
#endif
    P("float.value", offsetof(PyFloatObject, ob_fval));
    P("cell.ref", offsetof(PyCellObject, ob_ref));
    P("type.name", offsetof(PyTypeObject, tp_name));
    P("type.flags", offsetof(PyTypeObject, tp_flags));
    P("dict.keys", offsetof(PyDictObject, ma_keys));
    P("dict.values", offsetof(PyDictObject, ma_values));
#if PY_VERSION_HEX >= 0x030B0000
    P("keys.log2_size", offsetof(PyDictKeysObject, dk_log2_size));
    P("keys.log2_index_bytes", offsetof(PyDictKeysObject, dk_log2_index_bytes));
    P("keys.kind", offsetof(PyDictKeysObject, dk_kind));
    P("keys.nentries", offsetof(PyDictKeysObject, dk_nentries));
    P("keys.indices", offsetof(PyDictKeysObject, dk_indices));
    P("keys.entry_size", sizeof(PyDictKeyEntry));
    P("keys.unicode_entry_size", sizeof(PyDictUnicodeEntry));
#endif
    /* Thread names: sys.modules, a type's instance layout, managed dicts. */
#if PY_VERSION_HEX >= 0x030C0000
    P("interp.modules", offsetof(PyInterpreterState, imports.modules));
#else
    P("interp.modules", offsetof(PyInterpreterState, modules));
#endif
    P("type.basicsize", offsetof(PyTypeObject, tp_basicsize));
    P("type.dictoffset", offsetof(PyTypeObject, tp_dictoffset));
#if PY_VERSION_HEX >= 0x030B0000
    P("heaptype.cached_keys", offsetof(PyHeapTypeObject, ht_cached_keys));
#endif
#if PY_VERSION_HEX >= 0x030B0000
    {
        /* Where an instance's managed dict (and, 3.11, its values) sits before it: asked
         * of the interpreter's own inline functions, on a stand-in object. */
        static PyTypeObject type;
        static char room[128];
        PyObject *object = (PyObject *)(room + 64);
        type.tp_flags = Py_TPFLAGS_MANAGED_DICT;
        object->ob_type = &type;
        char *at = (char *)object;
#if PY_VERSION_HEX >= 0x030D0000
        P("object.managed_dict_before", at - (char *)_PyObject_ManagedDictPointer(object));
#elif PY_VERSION_HEX >= 0x030C0000
        P("object.managed_dict_before", at - (char *)_PyObject_DictOrValuesPointer(object));
#else
        P("object.managed_dict_before", at - (char *)_PyObject_ManagedDictPointer(object));
        P("object.values_before", at - (char *)_PyObject_ValuesPointer(object));
#endif
    }
#endif
#if PY_VERSION_HEX >= 0x030D0000
    P("dictvalues.values", offsetof(PyDictValues, values));
    P("dictvalues.valid", offsetof(PyDictValues, valid));
#endif
    if (PyLong_SHIFT != 30) {
        fprintf(stderr, "this CPython has %d-bit int digits: strata reads 30-bit ones\n", PyLong_SHIFT);
        return 1;
    }
    return 0;
}
