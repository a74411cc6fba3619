import Foundation

/// What the socket hands the connection, in arrival order.
enum SocketFrame: Sendable {
    case text(Data)
    case closed(code: String)
}
