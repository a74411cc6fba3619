import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A JSON-lines control socket (`<state>/control.sock`) for faults and reboots from other processes.
///
/// One request per line, one reply line each:
/// ```
/// {"command":"devices"}
/// {"command":"inject","udid":"<UDID or name>","fault":{"throttle":{"bytesPerSecond":35000000}}}
/// {"command":"clearFaults","udid":"…","kind":"throttle"}      (kind optional)
/// {"command":"reboot","udid":"…"}
/// {"command":"acceptNextPairing","udid":"…"}   (the user taps "Trust" for the next host, 120 s)
/// {"command":"resetTrust","udid":"…"}   ("Reset Location & Privacy": no host is trusted any more)
/// {"command":"installedApps","udid":"…"}  {"command":"runningApp","udid":"…"}
/// {"command":"setHealth","udid":"…","health":{"batteryLevel":12,"charging":false,"externalConnected":false}}
///     (battery and storage as lockdown reports them; `dataAvailable` in bytes, optional)
/// {"command":"health","udid":"…"}
/// ```
/// Replies: `{"ok":true,…}` or `{"ok":false,"error":"…"}`.
final class ControlServer: Sendable {
    private let daemon: VirtualUsbmuxd
    private let logger: Logger
    private let channel = NIOLockedValueBox<Channel?>(nil)
    private let file = NIOLockedValueBox<SocketFile?>(nil)

    init(daemon: VirtualUsbmuxd, logger: Logger) {
        self.daemon = daemon
        self.logger = logger
    }

    func start(path socketPath: String) async throws {
        try SocketFile.prepare(socketPath)
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    let stream = try ByteStream(channel: channel)
                    Task { await self.serve(stream) }
                }
            }
        let bound = try await bootstrap.withBoundSocket(try SocketFile.listeningSocket(at: socketPath)).get()
        channel.withLockedValue { $0 = bound }
        file.withLockedValue { $0 = SocketFile.bound(socketPath) }
    }

    func stop() async {
        let bound = channel.withLockedValue { channel in
            defer { channel = nil }
            return channel
        }
        try? await bound?.close()
        file.withLockedValue { $0 }?.remove()
    }

    struct Request: Decodable {
        let command: String
        let udid: String?
        let fault: VirtualFault?
        let kind: String?
        let onNetwork: Bool?
        let health: VirtualDeviceHealth?
    }

    private func serve(_ stream: ByteStream) async {
        defer { stream.close() }
        var pending = Data()
        while true {
            guard let chunk = try? await stream.read(upTo: 65_536, timeout: .seconds(600)) else { return }
            pending.append(contentsOf: chunk.readableBytesView)
            guard pending.count < 1_048_576 else { return }
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = pending[pending.startIndex..<newline]
                pending = Data(pending[(newline + 1)...])
                guard !line.isEmpty else { continue }
                let reply = await handle(Data(line))
                var buffer = ByteBuffer(bytes: reply)
                buffer.writeString("\n")
                do { try await stream.write(buffer) } catch { return }
            }
        }
    }

    private func handle(_ line: Data) async -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        func failure(_ message: String) -> Data {
            (try? encoder.encode(["ok": AnyEncodable(false), "error": AnyEncodable(message)])) ?? Data()
        }
        guard let request = try? JSONDecoder().decode(Request.self, from: line) else {
            return failure("not a JSON request with a \"command\"")
        }
        do {
            var reply: [String: AnyEncodable] = ["ok": true]
            switch request.command {
            case "devices":
                reply["devices"] = AnyEncodable(await daemon.devices())
            case "inject":
                guard let fault = request.fault else { return failure("inject needs a \"fault\"") }
                try await daemon.inject(fault, udid: try udid(request))
            case "clearFaults":
                try await daemon.clearFaults(udid: try udid(request), kind: request.kind)
            case "reboot":
                try await daemon.reboot(udid: try udid(request))
            case "acceptNextPairing":
                try await daemon.acceptNextPairing(udid: try udid(request))
            case "resetTrust":
                try await daemon.resetTrust(udid: try udid(request))
            case "setOnNetwork":
                // A network twin leaves Wi-Fi (false) or comes back (true).
                guard let onNetwork = request.onNetwork else {
                    return failure("setOnNetwork needs \"onNetwork\"")
                }
                try await daemon.setOnNetwork(onNetwork, udid: try udid(request))
            case "setHealth":
                guard let health = request.health else { return failure("setHealth needs a \"health\"") }
                try await daemon.setHealth(health, udid: try udid(request))
            case "health":
                reply["health"] = AnyEncodable(try await daemon.health(udid: try udid(request)))
            case "installedApps":
                reply["apps"] = AnyEncodable(try await daemon.installedApps(udid: try udid(request)))
            case "runningApp":
                if let app = try await daemon.runningApp(udid: try udid(request)) {
                    reply["app"] = AnyEncodable(app)
                }
            default:
                return failure("unknown command \(request.command)")
            }
            return try encoder.encode(reply)
        } catch {
            return failure("\(error)")
        }
    }

    private func udid(_ request: Request) throws -> String {
        guard let udid = request.udid else {
            throw VirtualDeviceError.invalidConfiguration("the request needs a \"udid\"")
        }
        return udid
    }
}
