import Foundation

/// What the socket hands the connection, in arrival order.
enum SocketFrame: Sendable {
    case text(Data)
    /// The connection is being closed because the server broke a limit or the protocol (the reason,
    /// as a clause); `.closed` follows.
    case failed(String)
    case closed(code: String)
}
