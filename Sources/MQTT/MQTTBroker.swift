import Foundation
import HADeployCore

/// Where an MQTT broker is and how to log in: `mqtt://user:password@host:1883` or `mqtts://…:8883`.
/// `description` never shows the password.
public struct MQTTBroker: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int
    /// `mqtts://`: TLS, the certificate verified against the system's roots (plus `caFile`).
    public var secure: Bool
    public var username: String?
    public var password: Secret?
    /// A PEM file holding the broker's certificate or its CA (a private CA, a self-signed broker).
    public var caFile: String?

    public init(
        host: String, port: Int, secure: Bool, username: String? = nil, password: Secret? = nil,
        caFile: String? = nil
    ) {
        self.host = host
        self.port = port
        self.secure = secure
        self.username = username
        self.password = password
        self.caFile = caFile
    }

    /// Parses a broker URL; every mistake is one line naming what to fix, never the password.
    public init(url text: String, caFile: String? = nil) throws {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let shown = URLCredentials.redact(trimmed)
        func invalid(_ why: String) -> MQTTError {
            MQTTError(.invalidConfiguration, "the MQTT broker URL \(shown) \(why)")
        }
        guard !trimmed.isEmpty else {
            throw MQTTError(
                .invalidConfiguration,
                "no MQTT broker: set MQTT_URL (mqtt://user:password@host:1883) or pass --publish URL")
        }
        guard let components = URLComponents(string: trimmed), let scheme = components.scheme?.lowercased()
        else {
            throw invalid(
                "is not a URL: write it as mqtt://user:password@host:1883 (percent-encode @ : / in the password)"
            )
        }
        let secure: Bool
        switch scheme {
        case "mqtt", "tcp": secure = false
        case "mqtts", "ssl": secure = true
        default: throw invalid("has the scheme \(scheme)://: use mqtt:// (plain TCP) or mqtts:// (TLS)")
        }
        guard let host = components.host, !host.isEmpty else {
            throw invalid("names no host: write it as \(scheme)://host:port")
        }
        if !components.path.isEmpty && components.path != "/" {
            throw invalid("has a path (\(components.path)): an MQTT broker is a host and a port only")
        }
        let port = components.port ?? (secure ? 8883 : 1883)
        guard (1...65535).contains(port) else { throw invalid("has the port \(port): give 1 to 65535") }
        let username = components.user.flatMap { $0.isEmpty ? nil : $0 }
        let password = components.password.map(Secret.init)
        if password != nil && username == nil {
            throw invalid("has a password but no user name: write it as \(scheme)://user:password@host")
        }
        self.init(
            host: host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host, port: port,
            secure: secure, username: username, password: password, caFile: caFile)
    }

    /// `mqtt://user@host:port` (the password never shown).
    public var description: String {
        let user = username.map { "\($0)@" } ?? ""
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "\(secure ? "mqtts" : "mqtt")://\(user)\(shownHost):\(port)"
    }
}
