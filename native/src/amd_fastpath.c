/* driver.concurrent.logbuffer._fastpath: the client's per-message hot paths as a CPython extension.
 *
 * Everything else in native/ is reached through cffi, whose call costs more than a Python function call:
 * one offer through cffi spent more time crossing into C than appending, and a poll paid a Python loop per
 * fragment. These functions are called straight from Python (METH_FASTCALL) and, for poll, call the
 * fragment handler from C. They use the same memory-ordering rules as amd_term.c and amd_publication.c
 * (native/README.md): an acquire load of each frame length before its body is read. The only module that
 * imports this one is driver/concurrent/logbuffer/fastpath.py. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include "amd_publication.h"
#include "amd_term.h"

#define ALIGN_FRAME(length) (((int64_t)(length) + (AMD_FRAME_ALIGNMENT - 1)) & ~(int64_t)(AMD_FRAME_ALIGNMENT - 1))
#define OFFER_CLOSED (-4)

static PyObject *offset_name; /* "offset", interned */

static inline int32_t frame_length_acquire(const uint8_t *term, int64_t offset)
{
    return __atomic_load_n((const int32_t *)(term + offset), __ATOMIC_ACQUIRE);
}

static inline int is_padding(const uint8_t *term, int64_t offset)
{
    return __atomic_load_n((const uint16_t *)(term + offset + AMD_TYPE_OFFSET), __ATOMIC_RELAXED) == AMD_HDR_TYPE_PAD;
}

/* One message: bytes without a copy of their object, any other contiguous buffer through the buffer protocol. */
static int64_t offer_one(const amd_publication_t *p, PyObject *data, int64_t reserved_value, int *error)
{
    if (PyBytes_CheckExact(data))
    {
        const Py_ssize_t length = PyBytes_GET_SIZE(data);
        if (length > INT32_MAX)
        {
            return AMD_OFFER_MESSAGE_TOO_LONG;
        }
        return amd_publication_offer(p, (const uint8_t *)PyBytes_AS_STRING(data), (int32_t)length, reserved_value);
    }
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0)
    {
        *error = 1;
        return 0;
    }
    const int64_t result = view.len > INT32_MAX
        ? AMD_OFFER_MESSAGE_TOO_LONG
        : amd_publication_offer(p, (const uint8_t *)view.buf, (int32_t)view.len, reserved_value);
    PyBuffer_Release(&view);
    return result;
}

/* offer(publication_address, closed_address, on_error, data, reserved_value=0) -> position or code.
 * *closed != 0 -> CLOSED without touching the log; codes below MAX_POSITION_EXCEEDED go to on_error(code, data). */
static PyObject *fast_offer(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs < 4 || nargs > 5)
    {
        PyErr_SetString(PyExc_TypeError, "offer(publication, closed, on_error, data, reserved_value=0)");
        return NULL;
    }
    const amd_publication_t *p = (const amd_publication_t *)PyLong_AsVoidPtr(args[0]);
    const int32_t *closed = (const int32_t *)PyLong_AsVoidPtr(args[1]);
    if (p == NULL || closed == NULL)
    {
        return NULL;
    }
    if (*closed)
    {
        return PyLong_FromLong(OFFER_CLOSED);
    }
    int64_t reserved_value = 0;
    if (nargs == 5)
    {
        reserved_value = PyLong_AsLongLong(args[4]);
        if (reserved_value == -1 && PyErr_Occurred())
        {
            return NULL;
        }
    }
    int error = 0;
    const int64_t result = offer_one(p, args[3], reserved_value, &error);
    if (error)
    {
        return NULL;
    }
    if (result < AMD_OFFER_MAX_POSITION_EXCEEDED)
    {
        PyObject *code = PyLong_FromLongLong(result);
        if (code == NULL)
        {
            return NULL;
        }
        PyObject *call_args[2] = {code, args[3]};
        PyObject *value = PyObject_Vectorcall(args[2], call_args, 2, NULL);
        Py_DECREF(code);
        return value;
    }
    return PyLong_FromLongLong(result);
}

/* offer_many(publication_address, closed_address, on_error, messages) -> count or code.
 * Offers the messages of a list or tuple in order, retrying ADMIN_ACTION (a rotation) at once; stops at the
 * first that does not go. Returns how many went, or, when the first did not, its code (<= 0). */
static PyObject *fast_offer_many(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 4)
    {
        PyErr_SetString(PyExc_TypeError, "offer_many(publication, closed, on_error, messages)");
        return NULL;
    }
    const amd_publication_t *p = (const amd_publication_t *)PyLong_AsVoidPtr(args[0]);
    const int32_t *closed = (const int32_t *)PyLong_AsVoidPtr(args[1]);
    if (p == NULL || closed == NULL)
    {
        return NULL;
    }
    if (*closed)
    {
        return PyLong_FromLong(OFFER_CLOSED);
    }
    PyObject *seq = PySequence_Fast(args[3], "offer_many takes a sequence of messages");
    if (seq == NULL)
    {
        return NULL;
    }
    const Py_ssize_t count = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    Py_ssize_t sent = 0;
    int64_t result = 0;
    while (sent < count)
    {
        int error = 0;
        result = offer_one(p, items[sent], 0, &error);
        if (error)
        {
            Py_DECREF(seq);
            return NULL;
        }
        if (result == AMD_OFFER_ADMIN_ACTION)
        {
            result = offer_one(p, items[sent], 0, &error);
            if (error)
            {
                Py_DECREF(seq);
                return NULL;
            }
        }
        if (result <= 0)
        {
            break;
        }
        ++sent;
    }
    if (sent == 0 && result < AMD_OFFER_MAX_POSITION_EXCEEDED)
    {
        PyObject *code = PyLong_FromLongLong(result);
        if (code == NULL)
        {
            Py_DECREF(seq);
            return NULL;
        }
        PyObject *call_args[2] = {code, items[0]};
        PyObject *value = PyObject_Vectorcall(args[2], call_args, 2, NULL);
        Py_DECREF(code);
        Py_DECREF(seq);
        return value;
    }
    Py_DECREF(seq);
    return PyLong_FromLongLong(sent > 0 ? (int64_t)sent : result);
}

/* poll(handler, term_buffer, term_address, capacity, offset, fragment_limit, header, error_handler)
 *   -> (fragments read, new term offset)
 * As TermReader.read (docs/logbuffer.md section 6): from ``offset`` frames are walked while their length
 * (acquire) is positive and inside the term; padding is stepped over; each DATA frame goes to
 * handler(term_buffer, payload offset, payload length, header) with header.offset set to the frame's offset.
 * If the handler raises: with an error_handler (not None) it gets the exception and the frame counts as
 * consumed; without one the exception propagates (the caller then consumes nothing). */
static PyObject *fast_poll(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 8)
    {
        PyErr_SetString(
            PyExc_TypeError, "poll(handler, term_buffer, term_address, capacity, offset, limit, header, error_handler)");
        return NULL;
    }
    PyObject *handler = args[0];
    PyObject *term_buffer = args[1];
    const uint8_t *term = (const uint8_t *)PyLong_AsVoidPtr(args[2]);
    const long long capacity = PyLong_AsLongLong(args[3]);
    const long long start = PyLong_AsLongLong(args[4]);
    const long long limit = PyLong_AsLongLong(args[5]);
    PyObject *header = args[6];
    PyObject *error_handler = args[7];
    if (PyErr_Occurred())
    {
        return NULL;
    }
    int64_t offset = start;
    long long fragments = 0;
    const int64_t last_header = (int64_t)capacity - AMD_DATA_HEADER_LENGTH;
    while (fragments < limit && offset <= last_header)
    {
        const int32_t frame_length = frame_length_acquire(term, offset);
        if (frame_length <= 0)
        {
            break;
        }
        const int64_t frame_offset = offset;
        offset += ALIGN_FRAME(frame_length);
        if (is_padding(term, frame_offset))
        {
            continue;
        }
        PyObject *frame_offset_obj = PyLong_FromLongLong(frame_offset);
        PyObject *payload_offset = PyLong_FromLongLong(frame_offset + AMD_DATA_HEADER_LENGTH);
        PyObject *payload_length = PyLong_FromLong(frame_length - AMD_DATA_HEADER_LENGTH);
        if (frame_offset_obj == NULL || payload_offset == NULL || payload_length == NULL ||
            PyObject_SetAttr(header, offset_name, frame_offset_obj) < 0)
        {
            Py_XDECREF(frame_offset_obj);
            Py_XDECREF(payload_offset);
            Py_XDECREF(payload_length);
            return NULL;
        }
        Py_DECREF(frame_offset_obj);
        PyObject *call_args[4] = {term_buffer, payload_offset, payload_length, header};
        PyObject *value = PyObject_Vectorcall(handler, call_args, 4, NULL);
        Py_DECREF(payload_offset);
        Py_DECREF(payload_length);
        if (value == NULL)
        {
            if (error_handler == Py_None || !PyErr_ExceptionMatches(PyExc_Exception))
            {
                return NULL;
            }
            PyObject *type, *exc, *traceback;
            PyErr_Fetch(&type, &exc, &traceback);
            PyErr_NormalizeException(&type, &exc, &traceback);
            if (traceback != NULL)
            {
                PyException_SetTraceback(exc, traceback);
            }
            Py_XDECREF(type);
            Py_XDECREF(traceback);
            PyObject *handled = PyObject_CallOneArg(error_handler, exc);
            Py_DECREF(exc);
            if (handled == NULL)
            {
                return NULL;
            }
            Py_DECREF(handled);
            return Py_BuildValue("(LL)", fragments, (long long)offset);
        }
        Py_DECREF(value);
        ++fragments;
    }
    if (offset > capacity)
    {
        offset = capacity; /* only a corrupt length can overrun; never report an offset past the term */
    }
    return Py_BuildValue("(LL)", fragments, (long long)offset);
}

/* scan(term_address, capacity, offset, offsets, lengths, flags) -> (fragments, new term offset)
 * The batch poll's walk: as poll, but each DATA frame's payload offset, payload length and flags byte go into
 * the caller's int32, int32 and uint8 arrays (as many as the shortest holds) instead of to a handler. */
static PyObject *fast_scan(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 6)
    {
        PyErr_SetString(PyExc_TypeError, "scan(term_address, capacity, offset, offsets, lengths, flags)");
        return NULL;
    }
    const uint8_t *term = (const uint8_t *)PyLong_AsVoidPtr(args[0]);
    const long long capacity = PyLong_AsLongLong(args[1]);
    const long long start = PyLong_AsLongLong(args[2]);
    if (PyErr_Occurred())
    {
        return NULL;
    }
    Py_buffer offsets, lengths, flags;
    if (PyObject_GetBuffer(args[3], &offsets, PyBUF_WRITABLE) < 0)
    {
        return NULL;
    }
    if (PyObject_GetBuffer(args[4], &lengths, PyBUF_WRITABLE) < 0)
    {
        PyBuffer_Release(&offsets);
        return NULL;
    }
    if (PyObject_GetBuffer(args[5], &flags, PyBUF_WRITABLE) < 0)
    {
        PyBuffer_Release(&offsets);
        PyBuffer_Release(&lengths);
        return NULL;
    }
    Py_ssize_t max = offsets.len / 4;
    if (lengths.len / 4 < max)
    {
        max = lengths.len / 4;
    }
    if (flags.len < max)
    {
        max = flags.len;
    }
    int32_t *out_offsets = (int32_t *)offsets.buf;
    int32_t *out_lengths = (int32_t *)lengths.buf;
    uint8_t *out_flags = (uint8_t *)flags.buf;
    int64_t offset = start;
    Py_ssize_t count = 0;
    const int64_t last_header = (int64_t)capacity - AMD_DATA_HEADER_LENGTH;
    while (count < max && offset <= last_header)
    {
        const int32_t frame_length = frame_length_acquire(term, offset);
        if (frame_length <= 0)
        {
            break;
        }
        const int64_t frame_offset = offset;
        offset += ALIGN_FRAME(frame_length);
        if (!is_padding(term, frame_offset))
        {
            out_offsets[count] = (int32_t)(frame_offset + AMD_DATA_HEADER_LENGTH);
            out_lengths[count] = frame_length - AMD_DATA_HEADER_LENGTH;
            out_flags[count] = term[frame_offset + AMD_FLAGS_OFFSET];
            ++count;
        }
    }
    if (offset > capacity)
    {
        offset = capacity;
    }
    PyBuffer_Release(&offsets);
    PyBuffer_Release(&lengths);
    PyBuffer_Release(&flags);
    return Py_BuildValue("(nL)", count, (long long)offset);
}

static PyMethodDef methods[] = {
    {"offer", (PyCFunction)(void (*)(void))fast_offer, METH_FASTCALL, "A shared publication's offer in one call."},
    {"offer_many", (PyCFunction)(void (*)(void))fast_offer_many, METH_FASTCALL, "Many offers in one call."},
    {"poll", (PyCFunction)(void (*)(void))fast_poll, METH_FASTCALL, "TermReader.read with the handler called from C."},
    {"scan", (PyCFunction)(void (*)(void))fast_scan, METH_FASTCALL, "A batch poll's walk into arrays."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastpath", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__fastpath(void)
{
    offset_name = PyUnicode_InternFromString("offset");
    if (offset_name == NULL)
    {
        return NULL;
    }
    return PyModule_Create(&module);
}
