import Foundation

/// com.apple.mobile.screenshotr, a DeviceLink service (PROTOCOL.md §5).
struct ScreenshotrService {
    let runtime: DeviceRuntime
    let stream: ByteStream

    func run() async throws {
        // DeviceLink version: 300 before iOS 14, 400 from iOS 14 (the Debian client accepts both).
        let major = runtime.profile.majorVersion >= 14 ? 400 : 300
        try await send(["DLMessageVersionExchange", major, 0])
        let exchange = try await stream.readPropertyList(timeout: .seconds(30)) as? [Any] ?? []
        guard exchange.count >= 2, exchange[0] as? String == "DLMessageVersionExchange",
            exchange[1] as? String == "DLVersionsOk"
        else {
            throw TransportError.protocolViolation("screenshotr version exchange refused")
        }
        try await send(["DLMessageDeviceReady"])
        while true {
            let message = try await stream.readPropertyList(timeout: .seconds(120)) as? [Any] ?? []
            switch message.first as? String {
            case "DLMessageProcessMessage":
                let body = message.count > 1 ? message[1] as? [String: Any] : nil
                guard body?["MessageType"] as? String == "ScreenShotRequest" else {
                    throw TransportError.protocolViolation("unexpected screenshotr message")
                }
                let image = try await ScreenRenderer.screenshot(of: runtime)
                try await send([
                    "DLMessageProcessMessage", ["MessageType": "ScreenShotReply", "ScreenShotData": image],
                ])
            case "DLMessageDisconnect":
                return
            default:
                throw TransportError.protocolViolation("unexpected DeviceLink message")
            }
        }
    }

    private func send(_ message: [Any]) async throws {
        try await stream.writePropertyList(message, binary: true)
    }
}
