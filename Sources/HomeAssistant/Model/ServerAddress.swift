import Foundation

/// Where a Home Assistant server lives: scheme, host, port and an optional path prefix
/// (a reverse proxy serving HA under `https://host/ha/`).
///
/// Accepts `http`, `https`, `ws` and `wss` URLs. A URL that already ends in `/api/websocket` or
/// `/api/` is cut back to its base, so a pasted WebSocket URL works too.
public struct ServerAddress: Sendable, Hashable, Codable, CustomStringConvertible {
    /// `true` for https/wss.
    public let isSecure: Bool
    public let host: String
    public let port: Int
    /// Path prefix with a leading and a trailing slash; `/` when HA is served at the root.
    public let pathPrefix: String
    /// The longest server URL accepted (scheme, host, port and path prefix).
    public static let maximumLength = 2048

    public init(_ string: String) throws {
        let trimmed = string.trimmingCharacters(in: .whitespaces)
        // Printed in messages and sent in every request line: a URL is never a page of text.
        guard trimmed.utf8.count <= Self.maximumLength else {
            throw HomeAssistantError(
                .invalidServerURL, server: String(trimmed.prefix(64)) + "…",
                message:
                    "the server URL is \(trimmed.utf8.count) bytes long (at most \(Self.maximumLength)): "
                    + "give the address only, e.g. http://homeassistant.local:8123/")
        }
        // A CR or LF (a CRLF .env, a pasted header) would end up in the HTTP request line.
        if let control = trimmed.unicodeScalars.first(where: { $0.properties.generalCategory == .control }) {
            let shown =
                control == "\r"
                ? "a carriage return (CR)"
                : control == "\n"
                    ? "a line feed (LF)"
                    : "the control character U+\(String(control.value, radix: 16, uppercase: true))"
            throw HomeAssistantError(
                .invalidServerURL, server: trimmed.debugDescription,
                message: "the server URL \(trimmed.debugDescription) contains \(shown): remove it (a .env "
                    + "saved with Windows line endings ends every value in CR), e.g. http://homeassistant.local:8123/"
            )
        }
        guard let components = URLComponents(string: trimmed), let scheme = components.scheme?.lowercased(),
            let host = components.host, !host.isEmpty
        else {
            throw HomeAssistantError(
                .invalidServerURL, server: trimmed,
                message: "'\(trimmed)' is not a server URL: use e.g. http://homeassistant.local:8123/")
        }
        switch scheme {
        case "http", "ws": isSecure = false
        case "https", "wss": isSecure = true
        default:
            throw HomeAssistantError(
                .invalidServerURL, server: trimmed,
                message: "'\(trimmed)' has scheme '\(scheme)': use http, https, ws or wss")
        }
        // URLComponents keeps the brackets of an IPv6 literal on some platforms and not on others.
        self.host = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if let port = components.port, !(1...65535).contains(port) {
            throw HomeAssistantError(
                .invalidServerURL, server: trimmed,
                message: "'\(trimmed)' has port \(port), which is not a TCP port: use one from 1 to 65535 "
                    + "(Home Assistant's default is 8123), or none for \(isSecure ? 443 : 80)")
        }
        self.port = components.port ?? (isSecure ? 443 : 80)
        var path = components.path
        // `%0d%0a` decodes to a line break: it would reach the request line and every message.
        if path.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            throw HomeAssistantError(
                .invalidServerURL, server: trimmed,
                message: "the server URL '\(trimmed)' has an encoded control character (such as %0d or %0a) "
                    + "in its path: remove it, e.g. http://homeassistant.local:8123/")
        }
        for suffix in ["/api/websocket", "/api/websocket/", "/api/", "/api"] where path.hasSuffix(suffix) {
            path.removeLast(suffix.count)
            break
        }
        if !path.hasPrefix("/") { path = "/" + path }
        if !path.hasSuffix("/") { path += "/" }
        pathPrefix = path
    }

    /// `http(s)://host:port/prefix/`: the base the REST paths hang off.
    public var baseURL: String {
        "\(isSecure ? "https" : "http")://\(hostForURL):\(port)\(pathPrefix)"
    }

    /// `ws(s)://host:port/prefix/api/websocket`.
    public var webSocketURL: String {
        "\(isSecure ? "wss" : "ws")://\(hostForURL):\(port)\(webSocketPath)"
    }

    /// The request path of the WebSocket API, prefix included.
    public var webSocketPath: String { pathPrefix + "api/websocket" }

    /// The URL of a REST path such as `api/states`, prefix included.
    public func restURL(_ path: String) -> String {
        baseURL + (path.hasPrefix("/") ? String(path.dropFirst()) : path)
    }

    public var description: String { baseURL }

    /// The `Host` header: the port only when it is not the scheme's default (as browsers send it).
    var hostHeader: String {
        port == (isSecure ? 443 : 80) ? hostForURL : "\(hostForURL):\(port)"
    }

    private var hostForURL: String { host.contains(":") ? "[\(host)]" : host }
}
