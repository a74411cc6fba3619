import Foundation
import NIOCore

/// debugserver speaking the GDB remote serial protocol the way `idevicedebug run` uses it
/// (PROTOCOL.md §7): ack mode, argv via `A`, environment via `QEnvironmentHexEncoded`, `c` to run,
/// `k` to kill, `D` to detach (the app keeps running).
struct DebugserverService {
    let runtime: DeviceRuntime
    let stream: ByteStream

    enum Incoming {
        case packet(String)
        case interrupt
    }

    /// How long to wait for the app's first output before going quiet; idevicedebug reads each
    /// reply character with a 1 s timeout (PROTOCOL.md §7.2).
    static let outputWait: Duration = .milliseconds(600)

    func run() async throws {
        var ackMode = true
        var environment: [String] = []
        var arguments: [String] = []
        var target: VirtualInstalledApp?
        var context: VirtualAppContext?
        var crashed = false
        var detached = false
        defer {
            // A real debugserver takes its inferior down when the debugger goes away without `D`.
            if context != nil && !detached && !crashed {
                let runtime = self.runtime
                Task { await runtime.terminateRunningApp(reason: "debugger disconnected") }
            }
        }
        while true {
            let incoming: Incoming
            do {
                incoming = try await readPacket(ackMode: ackMode)
            } catch TransportError.timeout {
                continue
            }
            guard case .packet(let packet) = incoming else {
                try await send("T11thread:1;", ackMode: ackMode)
                continue
            }
            switch packet.first {
            case "Q" where packet.hasPrefix("QEnvironmentHexEncoded:"):
                environment.append(Self.decodeHex(String(packet.dropFirst("QEnvironmentHexEncoded:".count))))
                try await send("OK", ackMode: ackMode)
            case "Q" where packet.hasPrefix("QEnvironment:"):
                environment.append(String(packet.dropFirst("QEnvironment:".count)))
                try await send("OK", ackMode: ackMode)
            case "Q" where packet == "QStartNoAckMode":
                try await send("OK", ackMode: ackMode)
                ackMode = false
            case "Q":
                // QSetMaxPacketSize, QSetWorkingDir, QSetLogging, QSetDisableASLR…
                try await send("OK", ackMode: ackMode)
            case "A":
                arguments = Self.parseArguments(packet)
                target = await findApp(executablePath: arguments.first ?? "")
                // LLDB's debugserver answers a launch it cannot do with an error (PROTOCOL.md §7.2).
                try await send(target == nil ? "E89" : "OK", ackMode: ackMode)
            case "q" where packet == "qLaunchSuccess":
                if target == nil {
                    try await send("Eno such executable", ackMode: ackMode)
                } else if runtime.hasFault("passcodeLocked") {
                    try await send(
                        "EThe request was denied: the device was not, or could not be, unlocked",
                        ackMode: ackMode)
                } else {
                    try await send("OK", ackMode: ackMode)
                }
            case "q" where packet.hasPrefix("qfProcessInfo"):
                // lldb's process list, filtered by name (`name:<hex>;name_match:equals;`).
                try await send(await processList(packet), ackMode: ackMode)
            case "q" where packet == "qsProcessInfo":
                try await send("E04", ackMode: ackMode)
            case "q" where packet == "qProcessInfo":
                try await send(
                    context == nil ? "E44" : "pid:\(String(4000, radix: 16));parent-pid:1;", ackMode: ackMode)
            case "H":
                try await send("OK", ackMode: ackMode)
            case "c" where packet == "c" || packet.hasPrefix("vCont;c"):
                guard let app = target else {
                    try await send("W00", ackMode: ackMode)
                    continue
                }
                if runtime.hasFault("crashOnLaunch") {
                    await runtime.crashAtLaunch(app, arguments: arguments, environment: environment)
                    crashed = true
                    try await send("T06thread:1;", ackMode: ackMode)
                    continue
                }
                if context == nil {
                    context = await runtime.launch(app, arguments: arguments, environment: environment)
                }
                try await sendOutput(from: context, ackMode: ackMode)
            case "O" where packet == "OK":
                // idevicedebug acknowledges each O packet by sending "OK" as a command.
                try await sendOutput(from: context, ackMode: ackMode)
            case "k":
                if crashed {
                    try await send("X09", ackMode: ackMode)
                } else {
                    await runtime.terminateRunningApp(reason: "killed by debugger")
                    context = nil
                    try await send("OK", ackMode: ackMode)
                }
                return
            case "D":
                detached = true
                try await send("OK", ackMode: ackMode)
                runtime.logger.info("debugger detached; the app keeps running")
                return
            case "?":
                try await send(context != nil ? "T11thread:1;" : "W00", ackMode: ackMode)
            default:
                // Empty reply = "unsupported" in the GDB remote protocol.
                try await send("", ackMode: ackMode)
            }
        }
    }

    /// The foreground app as debugserver lists a process, when it matches the query; `E04` for none.
    private func processList(_ packet: String) async -> String {
        let fields = packet.drop { $0 != ":" }.dropFirst().split(separator: ";")
        let wanted = fields.first { $0.hasPrefix("name:") }.map { Self.decodeHex(String($0.dropFirst(5))) }
        guard let process = await runtime.runningProcess else { return "E04" }
        if let wanted, wanted != process.executable { return "E04" }
        let name = process.executable.utf8.map { String(format: "%02x", $0) }.joined()
        return "pid:\(String(process.pid, radix: 16));ppid:1;uid:1f5;gid:1f5;euid:1f5;egid:1f5;name:\(name);"
    }

    private func findApp(executablePath: String) async -> VirtualInstalledApp? {
        await runtime.installedApps.first { app in
            executablePath == app.path + "/" + app.executable || executablePath.hasPrefix(app.path + "/")
        }
    }

    /// Sends pending app output as one `O` packet, or stays silent when there is none (the client
    /// then waits until it is interrupted, which is how a running app looks to idevicedebug 1.3.0).
    /// The wait for output ends as soon as the client sends something (an interrupt): debugserver
    /// answers an interrupt at once, whatever the app prints.
    private func sendOutput(from context: VirtualAppContext?, ackMode: Bool) async throws {
        guard let context else { return }
        let deadline = ContinuousClock.now + Self.outputWait
        var lines = context.takeOutput()
        while lines.isEmpty && ContinuousClock.now < deadline && !stream.hasUnreadBytes {
            try? await Task.sleep(for: .milliseconds(10))
            lines = context.takeOutput()
        }
        guard !lines.isEmpty else { return }
        let text = lines.map { $0 + "\n" }.joined()
        try await send("O" + Self.encodeHex(text), ackMode: ackMode)
    }

    // MARK: packets

    private func readPacket(ackMode: Bool) async throws -> Incoming {
        while true {
            var byte = try await stream.read(exactly: 1, timeout: .seconds(3600))
            switch byte.readInteger(as: UInt8.self)! {
            case UInt8(ascii: "+"), UInt8(ascii: "-"):
                continue
            case 0x03:
                return .interrupt
            case UInt8(ascii: "$"):
                var payload: [UInt8] = []
                while true {
                    var next = try await stream.read(exactly: 1, timeout: .seconds(10))
                    let value = next.readInteger(as: UInt8.self)!
                    if value == UInt8(ascii: "#") { break }
                    payload.append(value)
                    guard payload.count <= 1_048_576 else {
                        throw TransportError.protocolViolation("GDB packet too long")
                    }
                }
                var checksum = try await stream.read(exactly: 2, timeout: .seconds(10))
                let expected = UInt8(checksum.readString(length: 2) ?? "", radix: 16)
                let actual = payload.reduce(UInt8(0)) { $0 &+ $1 }
                guard expected == actual else {
                    if ackMode { try await stream.write(Array("-".utf8)) }
                    continue
                }
                return .packet(String(decoding: payload, as: UTF8.self))
            default:
                continue
            }
        }
    }

    /// Acknowledges the client's packet (ack mode) and sends `payload` as a packet.
    private func send(_ payload: String, ackMode: Bool) async throws {
        let bytes = Array(payload.utf8)
        let checksum = bytes.reduce(UInt8(0)) { $0 &+ $1 }
        let packet = (ackMode ? "+" : "") + "$" + payload + "#" + String(format: "%02x", checksum)
        try await stream.write(Array(packet.utf8))
    }

    static func parseArguments(_ packet: String) -> [String] {
        // A<hexlen>,<index>,<hex>,<hexlen>,<index>,<hex>…
        let fields = packet.dropFirst().split(separator: ",", omittingEmptySubsequences: false)
        var arguments: [(Int, String)] = []
        var index = 0
        while index + 2 < fields.count {
            if let position = Int(fields[index + 1]) {
                arguments.append((position, decodeHex(String(fields[index + 2]))))
            }
            index += 3
        }
        return arguments.sorted { $0.0 < $1.0 }.map(\.1)
    }

    static func decodeHex(_ hex: String) -> String {
        var bytes: [UInt8] = []
        var iterator = hex.utf8.makeIterator()
        while let high = iterator.next(), let low = iterator.next() {
            if let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16) {
                bytes.append(value)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func encodeHex(_ text: String) -> String {
        text.utf8.map { String(format: "%02x", $0) }.joined()
    }
}
