import Foundation
import HADeployCore

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What pymobiledevice3's `tunneld` says about iOS 17+ tunnels.
public enum TunneldState: Sendable, Hashable {
    /// Nothing answers (or not with tunneld's JSON).
    case notRunning(reason: String)
    /// The UDIDs it has a tunnel to.
    case running(udids: Set<String>)
}

/// Asks tunneld which devices it has tunnels to.
public protocol TunneldProbing: Sendable {
    var address: String { get }
    func state() async -> TunneldState
}

/// Asks the real tunneld over HTTP (`GET /` on 127.0.0.1:49151, its default), with a short deadline.
public struct TunneldProbe: TunneldProbing {
    public var host: String
    public var port: Int
    public var timeout: Duration

    public init(host: String = "127.0.0.1", port: Int = 49151, timeout: Duration = .seconds(3)) {
        self.host = host
        self.port = port
        self.timeout = timeout
    }

    public var address: String { "\(host):\(port)" }

    public func state() async -> TunneldState {
        guard let url = URL(string: "http://\(host):\(port)/") else {
            return .notRunning(reason: "bad address \(address)")
        }
        var mutableRequest = URLRequest(url: url)
        mutableRequest.timeoutInterval = timeout.seconds
        let request = mutableRequest
        do {
            let data = try await withDeadline("tunneld", timeout + .seconds(1)) {
                try await Self.fetch(request)
            }
            return .running(udids: try PyMobileDevice3Parser.tunneledUDIDs(data))
        } catch {
            return .notRunning(reason: "\(error)")
        }
    }

    static func fetch(_ request: URLRequest) async throws -> Data {
        let session = URLSession(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }
        return try await withCheckedThrowingContinuation { continuation in
            session.dataTask(with: request) { data, response, error in
                if let error {
                    continuation.resume(throwing: error)
                } else if let status = (response as? HTTPURLResponse)?.statusCode, status != 200 {
                    continuation.resume(
                        throwing: PyMobileDevice3Parser.Malformed(reason: "HTTP status \(status)"))
                } else {
                    continuation.resume(returning: data ?? Data())
                }
            }.resume()
        }
    }
}
