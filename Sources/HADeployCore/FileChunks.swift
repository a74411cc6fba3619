import Foundation

/// A file read piece by piece: what ``FileSystem/read(atPath:chunkSize:_:)`` does for real files.
public enum FileChunks {
    public static func read(atPath path: String, chunkSize: Int, _ body: (Data) throws -> Void) throws {
        let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        while true {
            try Task.checkCancellation()
            guard let chunk = try handle.read(upToCount: max(1, chunkSize)), !chunk.isEmpty else { return }
            try body(chunk)
        }
    }
}
