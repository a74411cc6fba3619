import Logging

/// A log handler that removes URL credentials from messages and metadata before another handler
/// writes them: library logs (HTTP clients, connection errors) quote the URLs they were given. It
/// also neutralises control characters and workflow commands (``PrintableText``): they quote what
/// servers and devices answered.
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

    public func log(event: LogEvent) {
        var cleaned = event
        cleaned.message = "\(PrintableText.neutralised(URLCredentials.redact(event.message.description)))"
        cleaned.metadata = event.metadata?.mapValues {
            .string(PrintableText.neutralised(URLCredentials.redact("\($0)")))
        }
        wrapped.log(event: cleaned)
    }
}
