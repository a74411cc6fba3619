import NIOCore

/// Received bytes as a queue of the buffers NIO delivered: appending never copies, and large
/// reads (AFC file data) hand out slices of those buffers instead of one ever-growing buffer.
struct ChunkQueue {
    private var chunks = CircularBuffer<ByteBuffer>()
    private(set) var readableBytes = 0

    mutating func append(_ buffer: ByteBuffer) {
        guard buffer.readableBytes > 0 else { return }
        readableBytes += buffer.readableBytes
        chunks.append(buffer)
    }

    /// Up to `maximum` bytes from the first chunk (at least one byte if any is buffered).
    mutating func read(upTo maximum: Int) -> ByteBuffer {
        guard var first = chunks.first, maximum > 0 else { return ByteBuffer() }
        if first.readableBytes <= maximum {
            chunks.removeFirst()
            readableBytes -= first.readableBytes
            return first
        }
        let slice = first.readSlice(length: maximum)!
        chunks[chunks.startIndex] = first
        readableBytes -= maximum
        return slice
    }

    /// Exactly `count` bytes as the buffers they arrived in (no copy); the caller checked
    /// `readableBytes >= count`.
    mutating func readChunks(exactly count: Int) -> [ByteBuffer] {
        var chunks: [ByteBuffer] = []
        var taken = 0
        while taken < count {
            let piece = read(upTo: count - taken)
            taken += piece.readableBytes
            chunks.append(piece)
        }
        return chunks
    }

    /// Exactly `count` bytes; the caller checked `readableBytes >= count`.
    mutating func read(exactly count: Int) -> ByteBuffer {
        if let first = chunks.first, first.readableBytes >= count {
            return read(upTo: count)
        }
        var result = ByteBuffer()
        result.reserveCapacity(count)
        while result.readableBytes < count {
            var piece = read(upTo: count - result.readableBytes)
            result.writeBuffer(&piece)
        }
        return result
    }
}
