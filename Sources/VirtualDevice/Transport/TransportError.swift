import NIOCore

/// Why a connection to the emulator stopped.
enum TransportError: Error, CustomStringConvertible {
    case closed(String)
    case timeout(TimeAmount)
    case protocolViolation(String)

    var description: String {
        switch self {
        case .closed(let reason): return "connection closed: \(reason)"
        case .timeout(let amount):
            return "no data from the client within \(amount.nanoseconds / 1_000_000_000) s"
        case .protocolViolation(let what): return "protocol violation: \(what)"
        }
    }
}
