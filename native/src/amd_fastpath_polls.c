/* The polls of driver.concurrent.logbuffer._fastpath (native/README.md): poll (TermReader.read with the handler
 * called from C), scan (a batch poll's walk into arrays), messages (whole messages as tuples, no Python call)
 * and MessageStream, the asyncio iterator's per-message step. Same memory ordering as amd_term.c: an acquire
 * load of each frame length before its body is read. */
#include <string.h>
#include "amd_fastpath.h"
#include "amd_term.h"

#define ALIGN_FRAME(length) (((int64_t)(length) + (AMD_FRAME_ALIGNMENT - 1)) & ~(int64_t)(AMD_FRAME_ALIGNMENT - 1))
#define UNFRAGMENTED 0xC0 /* BEGIN | END */

static PyObject *offset_name; /* "offset", interned */

static inline int32_t frame_length_acquire(const uint8_t *term, int64_t offset)
{
    return __atomic_load_n((const int32_t *)(term + offset), __ATOMIC_ACQUIRE);
}

static inline int is_padding(const uint8_t *term, int64_t offset)
{
    return __atomic_load_n((const uint16_t *)(term + offset + AMD_TYPE_OFFSET), __ATOMIC_RELAXED) == AMD_HDR_TYPE_PAD;
}

/* The walk of poll, scan and messages (TermReader.read): from *offset, stepping over padding, to the next
 * committed frame (acquire load of its length) whose header is inside the term. Returns its length with
 * *offset at it, or 0 where the walk ends (nothing committed there, or the end of the term). */
static inline int32_t next_data_frame(const uint8_t *term, int64_t *offset, int64_t last_header)
{
    while (*offset <= last_header)
    {
        const int32_t frame_length = frame_length_acquire(term, *offset);
        if (frame_length <= 0)
        {
            return 0;
        }
        if (!is_padding(term, *offset))
        {
            return frame_length;
        }
        *offset += ALIGN_FRAME(frame_length);
    }
    return 0;
}

/* The ints poll hands its handler, reused while the handler keeps none of them (reused_int). */
static PyObject *poll_payload_offset, *poll_payload_length, *poll_frame_offset;
static PyObject *buffer_name; /* "buffer", interned */

/* poll(handler, term_buffer, term_address, capacity, offset, fragment_limit, header, error_handler)
 *   -> (fragments read, new term offset)
 * As TermReader.read (docs/logbuffer.md section 6): from ``offset`` frames are walked while their length
 * (acquire) is positive and inside the term; padding is stepped over; each DATA frame goes to
 * handler(term_buffer, payload offset, payload length, header) with header.offset set to the frame's offset.
 * If the handler raises: with an error_handler (not None) it gets the exception and the frame counts as
 * consumed; without one the exception propagates (the caller then consumes nothing). */
/* The frames of one poll to handler(term_buffer, payload offset, payload length, header), header.offset set to
 * each frame's offset (``slot``: member_slot(header, "offset")), from *offset while fewer than ``limit``:
 * *offset and *fragments follow. 0 when the walk ended or a raising handler's exception went to error_handler
 * (that frame consumed); -1 with the exception set when it propagates (the caller consumes nothing). */
static int deliver_frames(PyObject *handler, PyObject *term_buffer, const uint8_t *term, long long capacity,
                          int64_t *offset, long long limit, PyObject *header, PyObject **slot,
                          PyObject *error_handler, long long *fragments)
{
    const int64_t last_header = (int64_t)capacity - AMD_DATA_HEADER_LENGTH;
    while (*fragments < limit)
    {
        const int32_t frame_length = next_data_frame(term, offset, last_header);
        if (frame_length <= 0)
        {
            break;
        }
        const int64_t frame_offset = *offset;
        *offset += ALIGN_FRAME(frame_length);
        PyObject *payload_offset = reused_int(&poll_payload_offset, frame_offset + AMD_DATA_HEADER_LENGTH, NULL);
        PyObject *payload_length = reused_int(&poll_payload_length, frame_length - AMD_DATA_HEADER_LENGTH, NULL);
        if (payload_offset == NULL || payload_length == NULL ||
            set_int_at(header, offset_name, slot, &poll_frame_offset, frame_offset) < 0)
        {
            Py_XDECREF(payload_offset);
            Py_XDECREF(payload_length);
            return -1;
        }
        PyObject *call_args[4] = {term_buffer, payload_offset, payload_length, header};
        PyObject *value = PyObject_Vectorcall(handler, call_args, 4, NULL);
        Py_DECREF(payload_offset);
        Py_DECREF(payload_length);
        if (value == NULL)
        {
            if (error_handler == Py_None || !PyErr_ExceptionMatches(PyExc_Exception))
            {
                return -1;
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
                return -1;
            }
            Py_DECREF(handled);
            return 0;
        }
        Py_DECREF(value);
        ++*fragments;
    }
    if (*offset > capacity)
    {
        *offset = capacity; /* only a corrupt length can overrun; never report an offset past the term */
    }
    return 0;
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
    const uint8_t *term = (const uint8_t *)PyLong_AsVoidPtr(args[2]);
    const long long capacity = PyLong_AsLongLong(args[3]);
    const long long start = PyLong_AsLongLong(args[4]);
    const long long limit = PyLong_AsLongLong(args[5]);
    PyObject *header = args[6];
    if (PyErr_Occurred())
    {
        return NULL;
    }
    int64_t offset = start;
    long long fragments = 0;
    if (deliver_frames(args[0], args[1], term, capacity, &offset, limit, header, member_slot(header, offset_name),
                       args[7], &fragments) < 0)
    {
        return NULL;
    }
    return Py_BuildValue("(LL)", fragments, (long long)offset);
}

/* ImagePoll(owner, terms, addresses, term_length, header, position_address, position, on_batch, message_type,
 * session_id, stream_id): Image.poll (and poll_messages, below) as one C call (driver/client/image.py). An image's Python poll cost about ten times pyaeron's before the
 * first fragment (the Python frames of Subscription.poll and Image.poll, the tuple returned, a cffi store of
 * the position); here the position lives in the object (``position``) and goes to the subscriber position
 * counter at ``position_address`` with a release store, as AtomicCounter.set_ordered. ``closed`` set: every
 * poll returns 0 (the terms may be unmapped). ``batch_pending`` set: on_batch() first (Image._release_batch,
 * which consumes a poll_batch's batch). ``owner`` keeps the mapped terms and counter alive. */
typedef struct
{
    PyObject_HEAD
    PyObject *owner;
    PyObject *terms; /* the three term buffers, handed to the handler */
    PyObject *header;
    PyObject *on_batch;
    PyTypeObject *message_type; /* Message, for poll_messages */
    PyObject *session_id;
    PyObject *stream_id;
    const uint8_t *addresses[3];
    int64_t *position_counter;
    long long position;
    long long term_length;
    int shift;
    int closed;
    int batch_pending;
} ImagePoll;

static int image_poll_traverse(ImagePoll *self, visitproc visit, void *arg)
{
    Py_VISIT(self->owner);
    Py_VISIT(self->terms);
    Py_VISIT(self->header);
    Py_VISIT(self->on_batch);
    Py_VISIT(self->message_type);
    Py_VISIT(self->session_id);
    Py_VISIT(self->stream_id);
    return 0;
}

static int image_poll_clear(ImagePoll *self)
{
    self->closed = 1; /* nothing left to read from */
    Py_CLEAR(self->owner);
    Py_CLEAR(self->terms);
    Py_CLEAR(self->header);
    Py_CLEAR(self->on_batch);
    Py_CLEAR(self->message_type);
    Py_CLEAR(self->session_id);
    Py_CLEAR(self->stream_id);
    return 0;
}

static void image_poll_dealloc(ImagePoll *self)
{
    PyObject_GC_UnTrack(self);
    image_poll_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int image_poll_init(ImagePoll *self, PyObject *args, PyObject *kwargs)
{
    PyObject *owner, *terms, *addresses, *header, *position_address, *on_batch, *message_type, *session_id, *stream_id;
    long long term_length, position;
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0)
    {
        PyErr_SetString(PyExc_TypeError, "ImagePoll takes no keywords");
        return -1;
    }
    if (!PyArg_ParseTuple(args, "OO!O!LOOLOO!O!O!:ImagePoll", &owner, &PyTuple_Type, &terms, &PyTuple_Type,
                          &addresses, &term_length, &header, &position_address, &position, &on_batch, &PyType_Type,
                          &message_type, &PyLong_Type, &session_id, &PyLong_Type, &stream_id))
    {
        return -1;
    }
    if (!PyType_IsSubtype((PyTypeObject *)message_type, &PyTuple_Type) ||
        ((PyTypeObject *)message_type)->tp_dictoffset != 0)
    {
        PyErr_SetString(PyExc_TypeError, "ImagePoll: message_type must be a tuple subclass without a __dict__");
        return -1;
    }
    if (PyTuple_GET_SIZE(terms) != 3 || PyTuple_GET_SIZE(addresses) != 3 || term_length <= 0 ||
        (term_length & (term_length - 1)) != 0)
    {
        PyErr_SetString(PyExc_ValueError, "ImagePoll: three terms and addresses, a power-of-two term length");
        return -1;
    }
    for (int i = 0; i < 3; ++i)
    {
        self->addresses[i] = (const uint8_t *)PyLong_AsVoidPtr(PyTuple_GET_ITEM(addresses, i));
    }
    self->position_counter = (int64_t *)PyLong_AsVoidPtr(position_address);
    if (PyErr_Occurred())
    {
        return -1;
    }
    int shift = 0;
    while ((1LL << shift) < term_length)
    {
        ++shift;
    }
    Py_INCREF(owner);
    Py_INCREF(terms);
    Py_INCREF(header);
    Py_INCREF(on_batch);
    Py_XSETREF(self->owner, owner);
    Py_XSETREF(self->terms, terms);
    Py_XSETREF(self->header, header);
    Py_XSETREF(self->on_batch, on_batch);
    Py_INCREF(message_type);
    Py_INCREF(session_id);
    Py_INCREF(stream_id);
    Py_XSETREF(self->message_type, (PyTypeObject *)message_type);
    Py_XSETREF(self->session_id, session_id);
    Py_XSETREF(self->stream_id, stream_id);
    self->term_length = term_length;
    self->shift = shift;
    self->position = position;
    self->closed = 0;
    self->batch_pending = 0;
    return 0;
}

/* poll(handler, fragment_limit) -> fragments: Image.poll. */
static PyObject *image_poll_poll(ImagePoll *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2)
    {
        PyErr_SetString(PyExc_TypeError, "poll(handler, fragment_limit)");
        return NULL;
    }
    if (self->batch_pending && !self->closed)
    {
        PyObject *released = PyObject_CallNoArgs(self->on_batch);
        if (released == NULL)
        {
            return NULL;
        }
        Py_DECREF(released);
    }
    if (self->closed || self->terms == NULL)
    {
        return PyLong_FromLong(0);
    }
    const long long limit = PyLong_AsLongLong(args[1]);
    if (limit == -1 && PyErr_Occurred())
    {
        return NULL;
    }
    const int64_t position = self->position;
    const int64_t term_offset = position & (self->term_length - 1);
    const int index = (int)((position >> self->shift) % 3);
    PyObject *term_buffer = PyTuple_GET_ITEM(self->terms, index);
    PyObject *header = self->header;
    Py_INCREF(term_buffer);
    if (set_member(header, buffer_name, term_buffer) < 0)
    {
        return NULL;
    }
    int64_t offset = term_offset;
    long long fragments = 0;
    if (deliver_frames(args[0], term_buffer, self->addresses[index], self->term_length, &offset, limit, header,
                       member_slot(header, offset_name), Py_None, &fragments) < 0)
    {
        return NULL;
    }
    if (offset != term_offset && !self->closed)
    {
        self->position = position + (offset - term_offset);
        __atomic_store_n(self->position_counter, (int64_t)self->position, __ATOMIC_RELEASE);
    }
    return PyLong_FromLongLong(fragments);
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
    while (count < max)
    {
        const int32_t frame_length = next_data_frame(term, &offset, last_header);
        if (frame_length <= 0)
        {
            break;
        }
        out_offsets[count] = (int32_t)(offset + AMD_DATA_HEADER_LENGTH);
        out_lengths[count] = frame_length - AMD_DATA_HEADER_LENGTH;
        out_flags[count] = term[offset + AMD_FLAGS_OFFSET];
        offset += ALIGN_FRAME(frame_length);
        ++count;
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

/* The last message left in `spare` (the caller's messages of an earlier poll, which it has let go), rewritten
 * as a new message: possible when nothing but `spare` refers to it, to its bytes (of the same length) or to its
 * position (an int of as many digits), so that nothing can observe the change; that saves the four objects a
 * message otherwise allocates. A new reference, or NULL (no error) when it cannot be rewritten. Either way
 * *spare_left counts it as taken (the caller drops what was taken from spare at the end). */
static PyObject *recycled_message(
    PyObject *spare, Py_ssize_t *spare_left, PyTypeObject *type, const uint8_t *payload, Py_ssize_t length,
    PyObject *session_id, PyObject *stream_id, int64_t position, int64_t reserved_value)
{
#if REUSE_INTS
    if (spare == NULL || *spare_left == 0)
    {
        return NULL;
    }
    PyObject *message = PyList_GET_ITEM(spare, --*spare_left);
    if (!Py_IS_TYPE(message, type) || Py_REFCNT(message) != 1 || Py_SIZE(message) != 5)
    {
        return NULL;
    }
    PyObject *data = PyTuple_GET_ITEM(message, 0);
    PyObject *old_position = PyTuple_GET_ITEM(message, 3);
    if (!PyBytes_CheckExact(data) || Py_REFCNT(data) != 1 || PyBytes_GET_SIZE(data) != length ||
        !PyLong_CheckExact(old_position) || Py_REFCNT(old_position) != 1 ||
        int_digit_count((PyLongObject *)old_position) != digits_needed((uint64_t)position) || position <= 256)
    {
        return NULL;
    }
    PyObject *reserved = PyLong_FromLongLong(reserved_value);
    if (reserved == NULL)
    {
        return NULL;
    }
    memcpy(PyBytes_AS_STRING(data), payload, (size_t)length);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    ((PyBytesObject *)data)->ob_shash = -1; /* the hash of the old contents, if one was taken */
#pragma GCC diagnostic pop
    int_write((PyLongObject *)old_position, (uint64_t)position);
    Py_INCREF(session_id);
    Py_SETREF(((PyTupleObject *)message)->ob_item[1], session_id);
    Py_INCREF(stream_id);
    Py_SETREF(((PyTupleObject *)message)->ob_item[2], stream_id);
    Py_SETREF(((PyTupleObject *)message)->ob_item[4], reserved);
    Py_INCREF(message);
    return message;
#else
    (void)spare, (void)spare_left, (void)type, (void)payload, (void)length, (void)session_id, (void)stream_id;
    (void)position, (void)reserved_value;
    return NULL;
#endif
}

/* A new message_type(data, session_id, stream_id, position, reserved_value), filled as tuple.__new__ would. */
static PyObject *new_message(
    PyTypeObject *type, const uint8_t *payload, Py_ssize_t length, PyObject *session_id, PyObject *stream_id,
    int64_t position, int64_t reserved_value)
{
    PyObject *data = PyBytes_FromStringAndSize((const char *)payload, length);
    PyObject *position_obj = PyLong_FromLongLong(position);
    PyObject *reserved = PyLong_FromLongLong(reserved_value);
    PyObject *message = type->tp_alloc(type, 5);
    if (data == NULL || position_obj == NULL || reserved == NULL || message == NULL)
    {
        Py_XDECREF(data);
        Py_XDECREF(position_obj);
        Py_XDECREF(reserved);
        Py_XDECREF(message);
        return NULL;
    }
    Py_INCREF(session_id);
    Py_INCREF(stream_id);
    PyTuple_SET_ITEM(message, 0, data);
    PyTuple_SET_ITEM(message, 1, session_id);
    PyTuple_SET_ITEM(message, 2, stream_id);
    PyTuple_SET_ITEM(message, 3, position_obj);
    PyTuple_SET_ITEM(message, 4, reserved);
    return message;
}

/* The walk of messages (below) from *offset: *offset, *count and *fragment follow; 0, or -1 with an exception. */
static int walk_messages(PyTypeObject *message_type, const uint8_t *term, long long capacity, int64_t *offset_io,
                         long long limit, long long term_begin, PyObject *session_id, PyObject *stream_id,
                         PyObject *out, PyObject *spare, long long *count_out, int *fragment_out)
{
    Py_ssize_t spare_left = spare != NULL ? PyList_GET_SIZE(spare) : 0;
    const Py_ssize_t spare_count = spare_left;
    int status = -1;
    int64_t offset = *offset_io;
    long long count = 0;
    int fragment = 0;
    const int64_t last_header = (int64_t)capacity - AMD_DATA_HEADER_LENGTH;
    while (count < limit)
    {
        const int32_t frame_length = next_data_frame(term, &offset, last_header);
        if (frame_length <= 0)
        {
            break;
        }
        const uint8_t flags = term[offset + AMD_FLAGS_OFFSET];
        if ((flags & UNFRAGMENTED) != UNFRAGMENTED)
        {
            fragment = 1;
            break;
        }
        const int64_t next = offset + ALIGN_FRAME(frame_length);
        int64_t reserved_value;
        memcpy(&reserved_value, term + offset + AMD_RESERVED_VALUE_OFFSET, sizeof reserved_value);
        const uint8_t *payload = term + offset + AMD_DATA_HEADER_LENGTH;
        const Py_ssize_t length = frame_length - AMD_DATA_HEADER_LENGTH;
        const int64_t position = term_begin + (next > capacity ? capacity : next);
        PyObject *message = recycled_message(
            spare, &spare_left, message_type, payload, length, session_id, stream_id, position, reserved_value);
        if (message == NULL)
        {
            if (PyErr_Occurred())
            {
                goto done;
            }
            message = new_message(message_type, payload, length, session_id, stream_id, position, reserved_value);
            if (message == NULL)
            {
                goto done;
            }
        }
        const int appended = PyList_Append(out, message);
        Py_DECREF(message);
        if (appended < 0)
        {
            goto done;
        }
        offset = next;
        ++count;
    }
    if (offset > capacity)
    {
        offset = capacity;
    }
    status = 0;
done:
    if (spare != NULL && spare_left < spare_count && PyList_SetSlice(spare, spare_left, spare_count, NULL) < 0)
    {
        status = -1;
    }
    *offset_io = offset;
    *count_out = count;
    *fragment_out = fragment;
    return status;
}

/* messages(message_type, term_address, capacity, offset, limit, term_begin_position, session_id, stream_id, out,
 *          spare=None) -> (messages, new term offset, stopped at a fragment)
 * The asyncio iterator's walk (driver/client/aio.py): as poll, but each whole DATA frame (BEGIN and END set)
 * becomes message_type(data bytes, session_id, stream_id, position after the frame, reserved value) appended to
 * the list ``out``, with no Python call. message_type is a tuple subclass without a __dict__ (a NamedTuple);
 * it is filled as tuple.__new__ would. A frame of a fragmented message ends the walk before it (third value 1)
 * so that the caller's assembler takes it. ``spare``, a list of messages of earlier polls that the caller has
 * let go, is taken from the end and rewritten where nothing else holds them (recycled_message); what was
 * taken is removed from it. */
static PyObject *fast_messages(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs < 9 || nargs > 10)
    {
        PyErr_SetString(PyExc_TypeError,
                        "messages(message_type, term_address, capacity, offset, limit, term_begin_position, "
                        "session_id, stream_id, out, spare=None)");
        return NULL;
    }
    if (!PyType_Check(args[0]) || !PyType_IsSubtype((PyTypeObject *)args[0], &PyTuple_Type) ||
        ((PyTypeObject *)args[0])->tp_dictoffset != 0)
    {
        PyErr_SetString(PyExc_TypeError, "messages: message_type must be a tuple subclass without a __dict__");
        return NULL;
    }
    PyTypeObject *message_type = (PyTypeObject *)args[0];
    const uint8_t *term = (const uint8_t *)PyLong_AsVoidPtr(args[1]);
    const long long capacity = PyLong_AsLongLong(args[2]);
    const long long start = PyLong_AsLongLong(args[3]);
    const long long limit = PyLong_AsLongLong(args[4]);
    const long long term_begin = PyLong_AsLongLong(args[5]);
    PyObject *session_id = args[6];
    PyObject *stream_id = args[7];
    PyObject *out = args[8];
    if (PyErr_Occurred())
    {
        return NULL;
    }
    PyObject *spare = nargs == 10 && args[9] != Py_None ? args[9] : NULL;
    if (!PyList_Check(out) || (spare != NULL && !PyList_Check(spare)))
    {
        PyErr_SetString(PyExc_TypeError, "messages: out and spare must be lists");
        return NULL;
    }
    int64_t offset = start;
    long long count = 0;
    int fragment = 0;
    if (walk_messages(message_type, term, capacity, &offset, limit, term_begin, session_id, stream_id, out, spare,
                      &count, &fragment) < 0)
    {
        return NULL;
    }
    return Py_BuildValue("(LLi)", count, (long long)offset, fragment);
}

/* Image.poll_messages into ``out`` (a list; ``spare`` a list or NULL): the messages made by walk_messages; a
 * fragmented message's frames go to get_assembler(owner)'s assembler through image_poll_poll. Fragments read,
 * or -1 on error. ``get_assembler`` returns a new reference (called only when a fragmented message is met). */
typedef PyObject *(*assembler_getter)(PyObject *owner, PyObject *out);

static long long poll_messages_into(ImagePoll *self, PyObject *out, long long limit, PyObject *spare,
                                    assembler_getter get_assembler, PyObject *owner)
{
    if (self->batch_pending && !self->closed)
    {
        PyObject *released = PyObject_CallNoArgs(self->on_batch);
        if (released == NULL)
        {
            return -1;
        }
        Py_DECREF(released);
    }
    if (self->closed || self->terms == NULL)
    {
        return 0;
    }
    const int64_t position = self->position;
    const int64_t term_offset = position & (self->term_length - 1);
    const int index = (int)((position >> self->shift) % 3);
    int64_t offset = term_offset;
    long long count = 0;
    int fragment = 0;
    const int walked = walk_messages(self->message_type, self->addresses[index], self->term_length, &offset, limit,
                                     position - term_offset, self->session_id, self->stream_id, out, spare, &count,
                                     &fragment);
    if (offset != term_offset)
    {
        self->position = position + (offset - term_offset);
        __atomic_store_n(self->position_counter, (int64_t)self->position, __ATOMIC_RELEASE);
    }
    if (walked < 0)
    {
        return -1;
    }
    if (fragment && count < limit)
    {
        PyObject *assembler = get_assembler(owner, out);
        if (assembler == NULL)
        {
            return -1;
        }
        PyObject *rest_limit = PyLong_FromLongLong(limit - count);
        if (rest_limit == NULL)
        {
            Py_DECREF(assembler);
            return -1;
        }
        PyObject *poll_args[2] = {assembler, rest_limit};
        PyObject *rest = image_poll_poll(self, poll_args, 2);
        Py_DECREF(rest_limit);
        Py_DECREF(assembler);
        if (rest == NULL)
        {
            return -1;
        }
        count += PyLong_AsLongLong(rest);
        Py_DECREF(rest);
    }
    return count;
}

static PyObject *given_assembler(PyObject *owner, PyObject *out)
{
    (void)out;
    Py_INCREF(owner);
    return owner;
}

/* ImagePoll.poll_messages(out, fragment_limit, assembler, spare) -> fragments: Image.poll_messages, the
 * messages made by walk_messages; a fragmented message's frames go to assembler through this poll. */
static PyObject *image_poll_messages(ImagePoll *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 3 || nargs > 4)
    {
        PyErr_SetString(PyExc_TypeError, "poll_messages(out, fragment_limit, assembler, spare=None)");
        return NULL;
    }
    PyObject *out = args[0];
    PyObject *spare = nargs == 4 && args[3] != Py_None ? args[3] : NULL;
    if (!PyList_Check(out) || (spare != NULL && !PyList_Check(spare)))
    {
        PyErr_SetString(PyExc_TypeError, "poll_messages: out and spare must be lists");
        return NULL;
    }
    const long long limit = PyLong_AsLongLong(args[1]);
    if (limit == -1 && PyErr_Occurred())
    {
        return NULL;
    }
    const long long count = poll_messages_into(self, out, limit, spare, given_assembler, args[2]);
    return count < 0 ? NULL : PyLong_FromLongLong(count);
}

static PyMethodDef image_poll_methods[] = {
    {"poll", (PyCFunction)(void (*)(void))image_poll_poll, METH_FASTCALL, "Image.poll(handler, fragment_limit)."},
    {"poll_messages", (PyCFunction)(void (*)(void))image_poll_messages, METH_FASTCALL,
     "Image.poll_messages(out, fragment_limit, assembler, spare)."},
    {NULL, NULL, 0, NULL}};

static PyMemberDef image_poll_members[] = {
    {"position", T_LONGLONG, offsetof(ImagePoll, position), 0, "The image's position (this subscriber's)."},
    {"closed", T_INT, offsetof(ImagePoll, closed), 0, "Nonzero: every poll returns 0."},
    {"batch_pending", T_INT, offsetof(ImagePoll, batch_pending), 0, "Nonzero: on_batch() before each poll."},
    {NULL, 0, 0, 0, NULL}};

static PyTypeObject ImagePollType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "driver.concurrent.logbuffer._fastpath.ImagePoll",
    .tp_basicsize = sizeof(ImagePoll),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "One image's poll in C, its position kept here.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)image_poll_init,
    .tp_dealloc = (destructor)image_poll_dealloc,
    .tp_traverse = (traverseproc)image_poll_traverse,
    .tp_clear = (inquiry)image_poll_clear,
    .tp_methods = image_poll_methods,
    .tp_members = image_poll_members,
};

/* MessageStream(items, refill, poll=None): the asyncio message iterator's per-message step in C
 * (driver/client/aio.py). With ``poll``, a used-up list is first refilled by poll() (a plain call returning how
 * many messages items now holds, 0 when refill() should be awaited instead: nothing came, or the loop is due a
 * turn), so that a consumer that keeps up pays no coroutine per poll.
 * ``async for`` over it takes items[next] while there are any, with no Python frame: __anext__ returns the
 * stream itself as an awaitable that is already done (am_send hands the message straight back). When the list
 * is used up, __anext__ returns refill(), a Python coroutine that waits for more, refills ``items``, sets
 * ``next`` past what it returns and returns the first message (or raises StopAsyncIteration). */
typedef struct
{
    PyObject_HEAD
    PyObject *items; /* a list */
    PyObject *refill;
    PyObject *poll;  /* poll() -> messages now in items (refilled), 0 to await refill(); or NULL */
    PyObject *ready; /* the message the pending await returns */
    Py_ssize_t next;
    /* direct(subscription, spare, limit): a used-up list is refilled by the subscription's one C image here */
    PyObject *subscription;
    PyObject *spare;      /* a list: the last poll's messages, rewritten where nothing else holds them */
    PyObject *images;     /* the subscription's images tuple image_poll was found in */
    PyObject *image_poll; /* its one image's ImagePoll, or NULL: poll() instead */
    Py_ssize_t limit;     /* fragment_limit */
    Py_ssize_t handed;    /* messages handed over since the loop last ran (refill() resets it) */
} MessageStream;

static int stream_traverse(MessageStream *self, visitproc visit, void *arg)
{
    Py_VISIT(self->items);
    Py_VISIT(self->refill);
    Py_VISIT(self->poll);
    Py_VISIT(self->ready);
    Py_VISIT(self->subscription);
    Py_VISIT(self->spare);
    Py_VISIT(self->images);
    Py_VISIT(self->image_poll);
    return 0;
}

static int stream_clear(MessageStream *self)
{
    Py_CLEAR(self->items);
    Py_CLEAR(self->refill);
    Py_CLEAR(self->poll);
    Py_CLEAR(self->ready);
    Py_CLEAR(self->subscription);
    Py_CLEAR(self->spare);
    Py_CLEAR(self->images);
    Py_CLEAR(self->image_poll);
    return 0;
}

static void stream_dealloc(MessageStream *self)
{
    PyObject_GC_UnTrack(self);
    stream_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int stream_init(MessageStream *self, PyObject *args, PyObject *kwargs)
{
    PyObject *items, *refill, *poll = Py_None;
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0)
    {
        PyErr_SetString(PyExc_TypeError, "MessageStream(items, refill, poll=None) takes no keywords");
        return -1;
    }
    if (!PyArg_ParseTuple(args, "O!O|O:MessageStream", &PyList_Type, &items, &refill, &poll))
    {
        return -1;
    }
    Py_INCREF(items);
    Py_INCREF(refill);
    Py_XSETREF(self->items, items);
    Py_XSETREF(self->refill, refill);
    if (poll == Py_None)
    {
        Py_CLEAR(self->poll);
    }
    else
    {
        Py_INCREF(poll);
        Py_XSETREF(self->poll, poll);
    }
    Py_CLEAR(self->ready);
    self->next = PyList_GET_SIZE(items);
    return 0;
}

static PyObject *is_closed_name, *images_name, *poll_messages_name, *assembler_for_name;

/* The assembler of subscription._assembler_for(out): a fragmented message met by the direct poll. */
static PyObject *subscription_assembler(PyObject *subscription, PyObject *out)
{
    return PyObject_CallMethodOneArg(subscription, assembler_for_name, out);
}

/* The direct poll: how many messages items now holds (0: refill() is due, the loop's turn, a closed
 * subscription or nothing came), -1 on error, -2 when the subscription has not exactly one C image (poll()). */
static Py_ssize_t stream_poll_direct(MessageStream *self)
{
    if (self->handed >= self->limit)
    {
        return 0;
    }
    PyObject *closed = PyObject_GetAttr(self->subscription, is_closed_name);
    if (closed == NULL)
    {
        return -1;
    }
    const int is_closed = PyObject_IsTrue(closed);
    Py_DECREF(closed);
    if (is_closed != 0)
    {
        return is_closed < 0 ? -1 : 0;
    }
    PyObject *images = PyObject_GetAttr(self->subscription, images_name);
    if (images == NULL)
    {
        return -1;
    }
    if (images != self->images)
    {
        /* the subscription replaces its tuple when an image comes or goes: look its one ImagePoll up again */
        Py_CLEAR(self->image_poll);
        if (PyTuple_Check(images) && PyTuple_GET_SIZE(images) == 1)
        {
            PyObject *method = PyObject_GetAttr(PyTuple_GET_ITEM(images, 0), poll_messages_name);
            if (method == NULL)
            {
                Py_DECREF(images);
                return -1;
            }
            PyObject *owner = PyCFunction_Check(method) ? PyCFunction_GET_SELF(method) : NULL;
            if (owner != NULL && Py_TYPE(owner) == &ImagePollType)
            {
                Py_INCREF(owner);
                self->image_poll = owner;
            }
            Py_DECREF(method);
        }
        Py_XSETREF(self->images, images);
    }
    else
    {
        Py_DECREF(images);
    }
    if (self->image_poll == NULL)
    {
        return -2;
    }
    PyObject *items = self->items;
    const Py_ssize_t used = PyList_GET_SIZE(items);
    if (used > 0 &&
        (PyList_SetSlice(self->spare, 0, PY_SSIZE_T_MAX, items) < 0 || PyList_SetSlice(items, 0, used, NULL) < 0))
    {
        return -1;
    }
    if (poll_messages_into((ImagePoll *)self->image_poll, items, self->limit, self->spare, subscription_assembler,
                           self->subscription) < 0)
    {
        return -1;
    }
    const Py_ssize_t count = PyList_GET_SIZE(items);
    self->handed += count;
    return count;
}

/* MessageStream.direct(subscription, spare, fragment_limit): used up, the stream polls the subscription's one
 * C image itself (no Python frame per poll); poll() still serves a subscription with no or several images. */
static PyObject *stream_direct(MessageStream *self, PyObject *args)
{
    PyObject *subscription, *spare;
    Py_ssize_t limit;
    if (!PyArg_ParseTuple(args, "OO!n:direct", &subscription, &PyList_Type, &spare, &limit))
    {
        return NULL;
    }
    Py_INCREF(subscription);
    Py_INCREF(spare);
    Py_XSETREF(self->subscription, subscription);
    Py_XSETREF(self->spare, spare);
    Py_CLEAR(self->images);
    Py_CLEAR(self->image_poll);
    self->limit = limit;
    Py_RETURN_NONE;
}

static PyObject *stream_anext(MessageStream *self)
{
    release_ready_stop();
    Py_ssize_t direct = -2;
    if (self->items != NULL && self->next >= PyList_GET_SIZE(self->items) && self->subscription != NULL)
    {
        direct = stream_poll_direct(self);
        if (direct == -1)
        {
            return NULL;
        }
        if (direct > 0)
        {
            self->next = 0;
        }
    }
    if (direct == -2 && self->items != NULL && self->next >= PyList_GET_SIZE(self->items) && self->poll != NULL)
    {
        /* used up: a poll at once, with no coroutine; only when it brings nothing is refill() awaited */
        PyObject *got = PyObject_CallNoArgs(self->poll);
        if (got == NULL)
        {
            return NULL;
        }
        const long count = PyLong_AsLong(got);
        Py_DECREF(got);
        if (count == -1 && PyErr_Occurred())
        {
            return NULL;
        }
        if (count > 0)
        {
            self->next = 0;
        }
    }
    if (self->items != NULL && self->next < PyList_GET_SIZE(self->items))
    {
        PyObject *item = PyList_GET_ITEM(self->items, self->next);
        ++self->next;
        Py_INCREF(item);
        Py_XSETREF(self->ready, item);
        Py_INCREF(self);
        return (PyObject *)self;
    }
    if (self->refill == NULL)
    {
        PyErr_SetString(PyExc_RuntimeError, "MessageStream not initialised");
        return NULL;
    }
    return PyObject_CallNoArgs(self->refill);
}

#define STREAM_NOT_READY "MessageStream awaited without __anext__"

static PySendResult stream_send(MessageStream *self, PyObject *arg, PyObject **result)
{
    (void)arg;
    return send_ready(&self->ready, STREAM_NOT_READY, result);
}

static PyObject *stream_iternext(MessageStream *self)
{
    return next_ready(&self->ready, STREAM_NOT_READY);
}

static PyMemberDef stream_members[] = {
    {"next", T_PYSSIZET, offsetof(MessageStream, next), 0, "Index in items of the next message to hand over."},
    {"handed", T_PYSSIZET, offsetof(MessageStream, handed), 0, "Messages handed over since the loop last ran."},
    {NULL, 0, 0, 0, NULL}};

static PyMethodDef stream_methods[] = {
    {"direct", (PyCFunction)stream_direct, METH_VARARGS,
     "direct(subscription, spare, fragment_limit): poll the subscription's one C image without a Python frame."},
    {NULL, NULL, 0, NULL}};

static PyAsyncMethods stream_async = {
    .am_await = same_object,
    .am_aiter = same_object,
    .am_anext = (unaryfunc)stream_anext,
    .am_send = (sendfunc)stream_send,
};

static PyTypeObject MessageStreamType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "driver.concurrent.logbuffer._fastpath.MessageStream",
    .tp_basicsize = sizeof(MessageStream),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_BASETYPE,
    .tp_doc = "An async iterator over a list that a refill coroutine tops up (a subclass may add aclose).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)stream_init,
    .tp_dealloc = (destructor)stream_dealloc,
    .tp_traverse = (traverseproc)stream_traverse,
    .tp_clear = (inquiry)stream_clear,
    .tp_as_async = &stream_async,
    .tp_iter = same_object,
    .tp_iternext = (iternextfunc)stream_iternext,
    .tp_members = stream_members,
    .tp_methods = stream_methods,
};

static PyMethodDef polls_functions[] = {
    {"poll", (PyCFunction)(void (*)(void))fast_poll, METH_FASTCALL, "TermReader.read with the handler called from C."},
    {"scan", (PyCFunction)(void (*)(void))fast_scan, METH_FASTCALL, "A batch poll's walk into arrays."},
    {"messages", (PyCFunction)(void (*)(void))fast_messages, METH_FASTCALL, "Whole messages as tuples, no Python call."},
    {NULL, NULL, 0, NULL}};

int amd_fastpath_add_polls(PyObject *module)
{
    offset_name = PyUnicode_InternFromString("offset");
    buffer_name = PyUnicode_InternFromString("buffer");
    is_closed_name = PyUnicode_InternFromString("is_closed");
    images_name = PyUnicode_InternFromString("_images");
    poll_messages_name = PyUnicode_InternFromString("poll_messages");
    assembler_for_name = PyUnicode_InternFromString("_assembler_for");
    if (offset_name == NULL || buffer_name == NULL || is_closed_name == NULL || images_name == NULL ||
        poll_messages_name == NULL || assembler_for_name == NULL || PyType_Ready(&MessageStreamType) < 0 ||
        PyModule_AddType(module, &MessageStreamType) < 0 || PyType_Ready(&ImagePollType) < 0 ||
        PyModule_AddType(module, &ImagePollType) < 0)
    {
        return -1;
    }
    return PyModule_AddFunctions(module, polls_functions);
}
