import Logging

/// Library logs are off during a measurement (they would cost time); `--verbose` shows them on stderr.
enum BenchLogger {
    static func make(_ label: String, verbose: Bool) -> Logger {
        guard verbose else { return Logger(label: label, factory: { _ in SwiftLogNoOpLogHandler() }) }
        var logger = Logger(label: label, factory: { StreamLogHandler.standardError(label: $0) })
        logger.logLevel = .debug
        return logger
    }
}
