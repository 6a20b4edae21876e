/* The offers of driver.concurrent.logbuffer._fastpath (native/README.md): Offers and ExclusiveOffers, whose
 * methods offer, offer_many, offer_async and try_claim are each one METH_FASTCALL call into the native offer
 * of amd_publication.c; Done, the awaitable of an offer_async that went at once; and put_int32_release, a
 * fast-path claim's commit. */
#include "amd_fastpath.h"
#include "amd_publication.h"
#include "amd_term.h"

#define OFFER_CLOSED (-4)
/* For the bodies shared by the shared and exclusive entry points: inlined into each, the native offer they are
 * given is a direct call (left to itself GCC kept offer_many_with out of line, calling through the pointer). */
#define OFFER_INLINE static inline __attribute__((always_inline))

/* BufferClaim's slots, interned */
static PyObject *claim_buffer_name, *claim_offset_name, *claim_length_name, *claim_address_name;

/* The native offer of a shared or an exclusive publication (native/include/amd_publication.h). */
typedef int64_t (*offer_fn)(void *publication, const uint8_t *src, int32_t length, int64_t reserved_value);

static int64_t shared_offer(void *publication, const uint8_t *src, int32_t length, int64_t reserved_value)
{
    return amd_publication_offer((const amd_publication_t *)publication, src, length, reserved_value);
}

static int64_t exclusive_offer(void *publication, const uint8_t *src, int32_t length, int64_t reserved_value)
{
    return amd_exclusive_publication_offer((amd_exclusive_publication_t *)publication, src, length, reserved_value);
}

/* One message: bytes without a copy of their object, any other contiguous buffer through the buffer protocol. */
OFFER_INLINE int64_t offer_one(offer_fn fn, void *p, PyObject *data, int64_t reserved_value, int *error)
{
    if (PyBytes_CheckExact(data))
    {
        const Py_ssize_t length = PyBytes_GET_SIZE(data);
        if (length > INT32_MAX)
        {
            return AMD_OFFER_MESSAGE_TOO_LONG;
        }
        return fn(p, (const uint8_t *)PyBytes_AS_STRING(data), (int32_t)length, reserved_value);
    }
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0)
    {
        *error = 1;
        return 0;
    }
    const int64_t result = view.len > INT32_MAX
        ? AMD_OFFER_MESSAGE_TOO_LONG
        : fn(p, (const uint8_t *)view.buf, (int32_t)view.len, reserved_value);
    PyBuffer_Release(&view);
    return result;
}

/* on_error(code, data) for an offer that failed with a code below MAX_POSITION_EXCEEDED: its result or NULL. */
static inline PyObject *call_on_error(PyObject *on_error, int64_t result, PyObject *data)
{
    PyObject *code = PyLong_FromLongLong(result);
    if (code == NULL)
    {
        return NULL;
    }
    PyObject *call_args[2] = {code, data};
    PyObject *value = PyObject_Vectorcall(on_error, call_args, 2, NULL);
    Py_DECREF(code);
    return value;
}

/* Done: an awaitable that is already finished with a value (the position of an offer_async that went at
 * once), so that ``await`` costs no coroutine. Awaiting it a second time is an error, as for a coroutine. */
typedef struct
{
    PyObject_HEAD
    PyObject *value;
} Done;

static void done_dealloc(Done *self)
{
    Py_XDECREF(self->value);
    PyObject_Free(self);
}

#define DONE_REUSED "cannot reuse an already awaited offer"

static PySendResult done_send(Done *self, PyObject *arg, PyObject **result)
{
    (void)arg;
    return send_ready(&self->value, DONE_REUSED, result);
}

static PyObject *done_iternext(Done *self)
{
    return next_ready(&self->value, DONE_REUSED);
}

static PyAsyncMethods done_async = {
    .am_await = same_object,
    .am_send = (sendfunc)done_send,
};

static PyTypeObject DoneType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "driver.concurrent.logbuffer._fastpath.Done",
    .tp_basicsize = sizeof(Done),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An awaitable already finished with a value.",
    .tp_dealloc = (destructor)done_dealloc,
    .tp_as_async = &done_async,
    .tp_iter = same_object,
    .tp_iternext = (iternextfunc)done_iternext,
};

/* Offers: one publication's offer, offer_many, offer_async and try_claim as the methods of one object. Bound
 * to it they are builtin methods, which CPython's interpreter calls straight (no functools.partial between,
 * and the publication's addresses are read from the object, not converted from ints at each call). */
typedef struct
{
    PyObject_HEAD
    void *publication;     /* an amd_publication_t, or an amd_exclusive_publication_t for ExclusiveOffers */
    const int32_t *closed; /* nonzero once the publication is closed: every later offer returns CLOSED */
    PyObject *owner;       /* keeps the memory of both alive */
    PyObject *on_error;    /* on_error(code, data) for MESSAGE_TOO_LONG and TERM_ID_MISMATCH */
    PyObject *wait;        /* wait(data, **kwargs): offer_async's coroutine when the offer did not go at once */
    PyObject *terms;       /* the three term buffers, for the BufferClaim of a try_claim */
    PyObject *position;    /* the int the last offer returned, rewritten by the next one (reused_int) */
    Done *done;            /* the Done the last offer_async returned, reused the same way */
    PyObject *claim_ints[3]; /* the frame offset, length and address last set in a BufferClaim (reused_int) */
} Offers;

static PyObject *position_result(Offers *self, int64_t value)
{
    return reused_int(&self->position, value, NULL);
}

static int offers_init(Offers *self, PyObject *args, PyObject *kwargs)
{
    PyObject *owner, *publication, *closed, *on_error, *wait, *terms;
    static char *keywords[] = {"owner", "publication", "closed", "on_error", "wait", "terms", NULL};
    if (!PyArg_ParseTupleAndKeywords(
            args, kwargs, "OOOOOO!", keywords, &owner, &publication, &closed, &on_error, &wait, &PyTuple_Type, &terms))
    {
        return -1;
    }
    if (PyTuple_GET_SIZE(terms) != 3)
    {
        PyErr_SetString(PyExc_ValueError, "Offers needs the three term buffers");
        return -1;
    }
    void *p = PyLong_AsVoidPtr(publication);
    const int32_t *c = (const int32_t *)PyLong_AsVoidPtr(closed);
    if (p == NULL || c == NULL)
    {
        if (!PyErr_Occurred())
        {
            PyErr_SetString(PyExc_ValueError, "Offers needs the publication's and the closed flag's addresses");
        }
        return -1;
    }
    self->publication = p;
    self->closed = c;
    Py_INCREF(owner);
    Py_XSETREF(self->owner, owner);
    Py_INCREF(on_error);
    Py_XSETREF(self->on_error, on_error);
    Py_INCREF(wait);
    Py_XSETREF(self->wait, wait);
    Py_INCREF(terms);
    Py_XSETREF(self->terms, terms);
    return 0;
}

static int offers_traverse(Offers *self, visitproc visit, void *arg)
{
    Py_VISIT(self->owner);
    Py_VISIT(self->on_error); /* the publication's bound method: a cycle back to this object */
    Py_VISIT(self->wait);
    Py_VISIT(self->terms);
    return 0;
}

static int offers_clear(Offers *self)
{
    Py_CLEAR(self->owner);
    Py_CLEAR(self->on_error);
    Py_CLEAR(self->wait);
    Py_CLEAR(self->terms);
    Py_CLEAR(self->position);
    Py_CLEAR(self->done);
    for (int i = 0; i < 3; ++i)
    {
        Py_CLEAR(self->claim_ints[i]);
    }
    return 0;
}

static void offers_dealloc(Offers *self)
{
    PyObject_GC_UnTrack(self);
    offers_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* offer(data, reserved_value=0) -> position or code; codes below MAX_POSITION_EXCEEDED go to on_error. */
OFFER_INLINE PyObject *offer_with(offer_fn fn, Offers *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1 || nargs > 2)
    {
        PyErr_SetString(PyExc_TypeError, "offer(data, reserved_value=0)");
        return NULL;
    }
    if (*self->closed != 0)
    {
        return PyLong_FromLong(OFFER_CLOSED);
    }
    int64_t reserved_value = 0;
    if (nargs == 2)
    {
        reserved_value = PyLong_AsLongLong(args[1]);
        if (reserved_value == -1 && PyErr_Occurred())
        {
            return NULL;
        }
    }
    int error = 0;
    const int64_t result = offer_one(fn, self->publication, args[0], reserved_value, &error);
    if (error)
    {
        return NULL;
    }
    if (result < AMD_OFFER_MAX_POSITION_EXCEEDED)
    {
        return call_on_error(self->on_error, result, args[0]);
    }
    return result > 0 ? position_result(self, result) : PyLong_FromLongLong(result);
}

/* Up to BLOCK messages of a shared publication's offer_many go with one reservation (amd_publication_offer_block). */
#define BLOCK 64

/* How many of items[0..count) from the front are bytes that fit one frame each (a block's messages), at most
 * BLOCK; their addresses and lengths go into sources and lengths. */
static inline int32_t gather_block(
    PyObject *const *items, Py_ssize_t count, int32_t max_payload_length, const uint8_t **sources, int32_t *lengths)
{
    int32_t n = 0;
    while (n < count && n < BLOCK && PyBytes_CheckExact(items[n]) && PyBytes_GET_SIZE(items[n]) <= max_payload_length)
    {
        sources[n] = (const uint8_t *)PyBytes_AS_STRING(items[n]);
        lengths[n] = (int32_t)PyBytes_GET_SIZE(items[n]);
        ++n;
    }
    return n;
}

/* offer_many(messages) -> count or code. Offers the messages of a list or tuple in order, retrying
 * ADMIN_ACTION (a rotation) at once; stops at the first that does not go. Returns how many went, or, when the
 * first did not, its code (<= 0). A shared publication (`blocks`) offers runs of bytes messages that fit a
 * frame as blocks with one reservation each; anything else goes one offer at a time. */
OFFER_INLINE PyObject *offer_many_with(offer_fn fn, int blocks, Offers *self, PyObject *messages)
{
    if (*self->closed != 0)
    {
        return PyLong_FromLong(OFFER_CLOSED);
    }
    PyObject *seq = PySequence_Fast(messages, "offer_many takes a sequence of messages");
    if (seq == NULL)
    {
        return NULL;
    }
    const Py_ssize_t count = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    Py_ssize_t sent = 0;
    int64_t result = 0;
    int error = 0;
    int retried = 0; /* one immediate retry of ADMIN_ACTION per message, as for a single offer */
    while (sent < count)
    {
        const uint8_t *sources[BLOCK];
        int32_t lengths[BLOCK];
        const amd_publication_t *p = (const amd_publication_t *)self->publication;
        const int32_t n =
            blocks ? gather_block(items + sent, count - sent, p->max_payload_length, sources, lengths) : 0;
        int32_t went = 1;
        if (n > 1)
        {
            result = amd_publication_offer_block(p, sources, lengths, n, &went);
        }
        else
        {
            result = offer_one(fn, self->publication, items[sent], 0, &error);
            if (error)
            {
                Py_DECREF(seq);
                return NULL;
            }
            went = result > 0;
        }
        if (went > 0)
        {
            sent += went;
            retried = 0;
        }
        else if (result == AMD_OFFER_ADMIN_ACTION && !retried)
        {
            retried = 1;
        }
        else
        {
            break;
        }
    }
    PyObject *value = sent == 0 && result < AMD_OFFER_MAX_POSITION_EXCEEDED
        ? call_on_error(self->on_error, result, items[0])
        : PyLong_FromLongLong(sent > 0 ? (int64_t)sent : result);
    Py_DECREF(seq);
    return value;
}

/* A Done holding the position of an offer_async that went: the one returned last when the caller has dropped
 * it (its value was taken by the await), else a new one. */
static PyObject *done_result(Offers *self, int64_t position)
{
    release_ready_stop();
    Done *done = self->done;
    if (done == NULL || Py_REFCNT(done) != 1 || done->value != NULL)
    {
        done = PyObject_New(Done, &DoneType);
        if (done == NULL)
        {
            return NULL;
        }
        done->value = NULL;
        Py_XSETREF(self->done, done);
    }
    done->value = position_result(self, position);
    if (done->value == NULL)
    {
        return NULL;
    }
    Py_INCREF(done);
    return (PyObject *)done;
}

/* offer_async(data, **kwargs) -> awaitable position. The offer once, as offer: when it goes, a Done holding
 * the position; otherwise (any code, closed included) wait(data, **kwargs), the caller's coroutine that waits
 * out back pressure and raises on a closed publication. */
OFFER_INLINE PyObject *offer_async_with(
    offer_fn fn, Offers *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (nargs != 1)
    {
        PyErr_SetString(PyExc_TypeError, "offer_async(data, **kwargs)");
        return NULL;
    }
    if (*self->closed == 0)
    {
        int error = 0;
        const int64_t result = offer_one(fn, self->publication, args[0], 0, &error);
        if (error)
        {
            return NULL;
        }
        if (result > 0)
        {
            return done_result(self, result);
        }
        if (result < AMD_OFFER_MAX_POSITION_EXCEEDED)
        {
            PyObject *value = call_on_error(self->on_error, result, args[0]);
            if (value == NULL)
            {
                return NULL;
            }
            Py_DECREF(value);
        }
    }
    /* args[0] is the data, followed by the keyword values named by kwnames */
    return PyObject_Vectorcall(self->wait, args, 1, kwnames);
}

/* The native claim of a shared or an exclusive publication (native/include/amd_publication.h). */
typedef int64_t (*claim_fn)(void *publication, int32_t length, int32_t *frame_offset, int32_t *partition);

static int64_t shared_claim(void *publication, int32_t length, int32_t *frame_offset, int32_t *partition)
{
    return amd_publication_claim((const amd_publication_t *)publication, length, frame_offset, partition);
}

static int64_t exclusive_claim(void *publication, int32_t length, int32_t *frame_offset, int32_t *partition)
{
    return amd_exclusive_publication_claim((amd_exclusive_publication_t *)publication, length, frame_offset, partition);
}

/* try_claim(length, buffer_claim) -> new position or code. On success buffer_claim holds the frame (its
 * _buffer, _frame_offset and _frame_length set, as BufferClaim.wrap would) for the caller to fill and commit.
 * A negative length or one over the maximum payload raises ValueError, as the Python path does. */
OFFER_INLINE PyObject *try_claim_with(claim_fn fn, Offers *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2)
    {
        PyErr_SetString(PyExc_TypeError, "try_claim(length, buffer_claim)");
        return NULL;
    }
    const long length = PyLong_AsLong(args[0]);
    if (length == -1 && PyErr_Occurred())
    {
        return NULL;
    }
    const int32_t max_payload_length = ((const amd_publication_t *)self->publication)->max_payload_length;
    if (length < 0 || length > max_payload_length)
    {
        if (length < 0)
        {
            PyErr_Format(PyExc_ValueError, "cannot claim a negative length, length=%ld", length);
        }
        else
        {
            PyErr_Format(PyExc_ValueError, "claim of %ld bytes exceeds the max payload length %d", length,
                         (int)max_payload_length);
        }
        return NULL;
    }
    if (*self->closed != 0)
    {
        return PyLong_FromLong(OFFER_CLOSED);
    }
    int32_t frame_offset = 0, partition = 0;
    const int64_t result = fn(self->publication, (int32_t)length, &frame_offset, &partition);
    if (result < AMD_OFFER_MAX_POSITION_EXCEEDED)
    {
        return call_on_error(self->on_error, result, Py_None);
    }
    if (result <= 0)
    {
        return PyLong_FromLongLong(result);
    }
    /* As BufferClaim.wrap, plus the frame's address, which lets commit() store its length with one C call. */
    PyObject *claim = args[1];
    PyObject *term = PyTuple_GET_ITEM(self->terms, partition);
    const amd_publication_t *p = (const amd_publication_t *)self->publication;
    const uint8_t *frame = p->log + (int64_t)partition * p->term_length + frame_offset;
    Py_INCREF(term);
    if (set_member(claim, claim_buffer_name, term) < 0 ||
        set_member_int(claim, claim_offset_name, &self->claim_ints[0], frame_offset) < 0 ||
        set_member_int(claim, claim_length_name, &self->claim_ints[1], length + AMD_DATA_HEADER_LENGTH) < 0 ||
        set_member_int(claim, claim_address_name, &self->claim_ints[2], (int64_t)(uintptr_t)frame) < 0)
    {
        return NULL; /* a frame claimed but not handed over is unblocked by the driver after its timeout */
    }
    return position_result(self, result);
}

/* The methods of Offers (shared publication) and ExclusiveOffers: the same bodies, each inlined with its
 * publication's native offer so that the offer is a direct call. */
#define OFFERS_METHODS(prefix, fn, claim, blocks)                                                                      \
    static PyObject *prefix##_offer(Offers *self, PyObject *const *args, Py_ssize_t nargs)                             \
    {                                                                                                                  \
        return offer_with(fn, self, args, nargs);                                                                      \
    }                                                                                                                  \
    static PyObject *prefix##_offer_many(Offers *self, PyObject *messages)                                             \
    {                                                                                                                  \
        return offer_many_with(fn, blocks, self, messages);                                                            \
    }                                                                                                                  \
    static PyObject *prefix##_offer_async(Offers *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw)         \
    {                                                                                                                  \
        return offer_async_with(fn, self, args, nargs, kw);                                                            \
    }                                                                                                                  \
    static PyObject *prefix##_try_claim(Offers *self, PyObject *const *args, Py_ssize_t nargs)                         \
    {                                                                                                                  \
        return try_claim_with(claim, self, args, nargs);                                                               \
    }                                                                                                                  \
    static PyMethodDef prefix##_methods[] = {                                                                          \
        {"offer", (PyCFunction)(void (*)(void))prefix##_offer, METH_FASTCALL,                                          \
         "offer(data, reserved_value=0) -> new position, or a code (<= 0)."},                                          \
        {"offer_many", (PyCFunction)prefix##_offer_many, METH_O,                                                       \
         "offer_many(messages) -> how many went, or the first one's code (<= 0)."},                                    \
        {"offer_async", (PyCFunction)(void (*)(void))prefix##_offer_async, METH_FASTCALL | METH_KEYWORDS,              \
         "offer_async(data, **kwargs) -> an awaitable position: done at once, or the caller's wait."},                 \
        {"try_claim", (PyCFunction)(void (*)(void))prefix##_try_claim, METH_FASTCALL,                                  \
         "try_claim(length, buffer_claim) -> new position, or a code (<= 0)."},                                        \
        {NULL, NULL, 0, NULL}};

OFFERS_METHODS(offers, shared_offer, shared_claim, 1)
OFFERS_METHODS(exclusive_offers, exclusive_offer, exclusive_claim, 0)

#define OFFERS_TYPE(type_name, name, methods_table, doc)                                                               \
    static PyTypeObject type_name = {                                                                                  \
        PyVarObject_HEAD_INIT(NULL, 0)                                                                                 \
        .tp_name = "driver.concurrent.logbuffer._fastpath." name,                                                      \
        .tp_basicsize = sizeof(Offers),                                                                                \
        .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,                                                           \
        .tp_doc = doc,                                                                                                 \
        .tp_new = PyType_GenericNew,                                                                                   \
        .tp_init = (initproc)offers_init,                                                                              \
        .tp_traverse = (traverseproc)offers_traverse,                                                                  \
        .tp_clear = (inquiry)offers_clear,                                                                             \
        .tp_dealloc = (destructor)offers_dealloc,                                                                      \
        .tp_methods = methods_table,                                                                                   \
    };

OFFERS_TYPE(OffersType, "Offers", offers_methods,
            "Offers(owner, publication, closed, on_error, wait, terms): a shared publication's offers.")
OFFERS_TYPE(ExclusiveOffersType, "ExclusiveOffers", exclusive_offers_methods,
            "ExclusiveOffers(owner, publication, closed, on_error, wait, terms): an exclusive publication's offers.")

/* put_int32_release(address, value): a release store of an int32 (BufferClaim.commit of a fast-path claim). */
static PyObject *fast_put_int32_release(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 2)
    {
        PyErr_SetString(PyExc_TypeError, "put_int32_release(address, value)");
        return NULL;
    }
    int32_t *address = (int32_t *)PyLong_AsVoidPtr(args[0]);
    const long value = PyLong_AsLong(args[1]);
    if (address == NULL || (value == -1 && PyErr_Occurred()))
    {
        if (!PyErr_Occurred())
        {
            PyErr_SetString(PyExc_ValueError, "put_int32_release: no address");
        }
        return NULL;
    }
    __atomic_store_n(address, (int32_t)value, __ATOMIC_RELEASE);
    Py_RETURN_NONE;
}

static PyMethodDef offers_functions[] = {
    {"put_int32_release", (PyCFunction)(void (*)(void))fast_put_int32_release, METH_FASTCALL,
     "A release store of an int32 at an address."},
    {NULL, NULL, 0, NULL}};

int amd_fastpath_add_offers(PyObject *module)
{
    claim_buffer_name = PyUnicode_InternFromString("_buffer");
    claim_offset_name = PyUnicode_InternFromString("_frame_offset");
    claim_length_name = PyUnicode_InternFromString("_frame_length");
    claim_address_name = PyUnicode_InternFromString("_address");
    if (claim_buffer_name == NULL || claim_offset_name == NULL || claim_length_name == NULL ||
        claim_address_name == NULL)
    {
        return -1;
    }
    if (PyType_Ready(&DoneType) < 0 || PyType_Ready(&OffersType) < 0 || PyType_Ready(&ExclusiveOffersType) < 0)
    {
        return -1;
    }
    if (PyModule_AddType(module, &OffersType) < 0 || PyModule_AddType(module, &ExclusiveOffersType) < 0)
    {
        return -1;
    }
    return PyModule_AddFunctions(module, offers_functions);
}
