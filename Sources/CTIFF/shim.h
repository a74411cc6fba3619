// Thin C helpers over libtiff: Swift cannot call the variadic TIFFSetField/TIFFGetField,
// and in-memory I/O needs C callbacks for TIFFClientOpen.
#include <tiffio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    unsigned char *data;
    uint64_t size;
    uint64_t capacity;
    uint64_t position;
} ctiff_memory;

static inline tmsize_t ctiff_read_proc(thandle_t handle, void *buffer, tmsize_t count) {
    ctiff_memory *m = (ctiff_memory *)handle;
    if (count < 0 || m->position >= m->size) return 0;
    uint64_t available = m->size - m->position;
    uint64_t n = (uint64_t)count < available ? (uint64_t)count : available;
    memcpy(buffer, m->data + m->position, (size_t)n);
    m->position += n;
    return (tmsize_t)n;
}

static inline tmsize_t ctiff_write_proc(thandle_t handle, void *buffer, tmsize_t count) {
    ctiff_memory *m = (ctiff_memory *)handle;
    if (count < 0) return -1;
    uint64_t end = m->position + (uint64_t)count;
    if (end > m->capacity) {
        uint64_t capacity = m->capacity ? m->capacity : 65536;
        while (capacity < end) capacity *= 2;
        unsigned char *grown = (unsigned char *)realloc(m->data, (size_t)capacity);
        if (!grown) return -1;
        memset(grown + m->capacity, 0, (size_t)(capacity - m->capacity));
        m->data = grown;
        m->capacity = capacity;
    }
    memcpy(m->data + m->position, buffer, (size_t)count);
    m->position = end;
    if (end > m->size) m->size = end;
    return count;
}

static inline toff_t ctiff_seek_proc(thandle_t handle, toff_t offset, int whence) {
    ctiff_memory *m = (ctiff_memory *)handle;
    uint64_t base = whence == SEEK_CUR ? m->position : (whence == SEEK_END ? m->size : 0);
    m->position = base + offset;
    return m->position;
}

static inline int ctiff_close_proc(thandle_t handle) { (void)handle; return 0; }
static inline toff_t ctiff_size_proc(thandle_t handle) { return ((ctiff_memory *)handle)->size; }
static inline int ctiff_map_proc(thandle_t h, void **base, toff_t *size) {
    (void)h; (void)base; (void)size; return 0;
}
static inline void ctiff_unmap_proc(thandle_t h, void *base, toff_t size) {
    (void)h; (void)base; (void)size;
}

/// Opens a TIFF over a memory buffer (mode "w" to encode, "r" to decode).
static inline TIFF *ctiff_open_memory(ctiff_memory *memory, const char *mode) {
    return TIFFClientOpen("memory", mode, (thandle_t)memory, ctiff_read_proc, ctiff_write_proc,
                          ctiff_seek_proc, ctiff_close_proc, ctiff_size_proc, ctiff_map_proc,
                          ctiff_unmap_proc);
}

static inline void ctiff_memory_free(ctiff_memory *memory) {
    free(memory->data);
    memory->data = NULL;
    memory->size = memory->capacity = memory->position = 0;
}

/// libtiff prints to stderr by default; the codec reports errors through return values instead.
static inline void ctiff_silence(void) {
    TIFFSetErrorHandler(NULL);
    TIFFSetWarningHandler(NULL);
}

static inline int ctiff_set_u32(TIFF *tif, uint32_t tag, uint32_t value) {
    return TIFFSetField(tif, tag, value);
}
static inline int ctiff_set_u16(TIFF *tif, uint32_t tag, uint16_t value) {
    return TIFFSetField(tif, tag, (int)value);
}
static inline int ctiff_get_u32(TIFF *tif, uint32_t tag, uint32_t *value) {
    return TIFFGetField(tif, tag, value);
}
