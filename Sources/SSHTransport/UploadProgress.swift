/// How far an upload got; reported after each chunk, on the connection's queue.
public struct UploadProgress: Sendable, Equatable {
    public let bytesSent: Int64
    public let totalBytes: Int64
    /// The file being written, relative to the app directory.
    public let currentFile: String
}
