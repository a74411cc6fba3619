import Logging

/// A log handler that removes URL credentials from messages and metadata before another handler
/// writes them: library logs (HTTP clients, connection errors) quote the URLs they were given.
public struct RedactingLogHandler: LogHandler {
    private var wrapped: any LogHandler

    public init(_ wrapped: any LogHandler) { self.wrapped = wrapped }

    public var logLevel: Logger.Level {
        get { wrapped.logLevel }
        set { wrapped.logLevel = newValue }
    }

    public var metadata: Logger.Metadata {
        get { wrapped.metadata }
        set { wrapped.metadata = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { wrapped[metadataKey: key] }
        set { wrapped[metadataKey: key] = newValue }
    }

    public func log(
        level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String,
        file: String, function: String, line: UInt
    ) {
        let cleaned = metadata?.mapValues { Logger.MetadataValue.string(URLCredentials.redact("\($0)")) }
        wrapped.log(
            level: level, message: "\(URLCredentials.redact(message.description))", metadata: cleaned,
            source: source, file: file, function: function, line: line)
    }
}
