import Foundation
import NIOCore

/// One DTX message (the instruments wire format): a 32-byte fragment header, a 16-byte payload
/// header, the auxiliary arguments (a "primitive dictionary") and the NSKeyedArchiver payload.
struct DTXMessage {
    enum Kind: UInt8 {
        case ok = 0
        case data = 1
        case dispatch = 2
        case object = 3
        case error = 4
        case barrier = 5
        case primitive = 6
        case compressed = 7
    }

    static let magic: UInt32 = 0x1F3D_5B79
    static let fragmentHeaderLength = 32
    static let payloadHeaderLength = 16
    /// Bodies above this go out in fragments, as instruments sends them.
    static let fragmentLimit = 64 * 1024

    var kind: Kind
    var identifier: UInt32
    var conversationIndex: UInt32
    var channel: Int32
    var expectsReply: Bool
    var auxiliary: [UInt8] = []
    var payload: [UInt8] = []

    /// The wire bytes: one fragment, or a header fragment and body fragments.
    func encoded() -> [UInt8] {
        var body: [UInt8] = [kind.rawValue, 0, 0, 0]
        body.appendLittleEndian(UInt32(auxiliary.count))
        body.appendLittleEndian(UInt32(auxiliary.count + payload.count))
        body.appendLittleEndian(UInt32(0))
        body += auxiliary
        body += payload
        guard body.count > Self.fragmentLimit else {
            return header(index: 0, count: 1, size: body.count) + body
        }
        let pieces = stride(from: 0, to: body.count, by: Self.fragmentLimit).map {
            Array(body[$0..<min($0 + Self.fragmentLimit, body.count)])
        }
        var out = header(index: 0, count: UInt16(pieces.count + 1), size: body.count)
        for (index, piece) in pieces.enumerated() {
            out +=
                header(index: UInt16(index + 1), count: UInt16(pieces.count + 1), size: piece.count) + piece
        }
        return out
    }

    private func header(index: UInt16, count: UInt16, size: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.appendLittleEndian(Self.magic)
        out.appendLittleEndian(UInt32(Self.fragmentHeaderLength))
        out.appendLittleEndian(index)
        out.appendLittleEndian(count)
        out.appendLittleEndian(UInt32(size))
        out.appendLittleEndian(identifier)
        out.appendLittleEndian(conversationIndex)
        out.appendLittleEndian(UInt32(bitPattern: channel))
        out.appendLittleEndian(UInt32(expectsReply ? 1 : 0))
        return out
    }
}

/// The auxiliary arguments of a DTX message: a primitive dictionary whose keys are all null and
/// whose values are the arguments (strings, 32/64-bit integers, doubles, archived objects).
enum DTXArguments {
    enum Primitive {
        case null
        case string(String)
        case buffer([UInt8])
        case int32(Int32)
        case int64(Int64)
        case double(Double)
    }

    static func encode(_ arguments: [Primitive]) -> [UInt8] {
        guard !arguments.isEmpty else { return [] }
        var body: [UInt8] = []
        for argument in arguments {
            body.appendLittleEndian(UInt32(10))  // the null key
            switch argument {
            case .null:
                body.appendLittleEndian(UInt32(10))
            case .string(let text):
                body.appendLittleEndian(UInt32(1))
                body.appendLittleEndian(UInt32(text.utf8.count))
                body += Array(text.utf8)
            case .buffer(let bytes):
                body.appendLittleEndian(UInt32(2))
                body.appendLittleEndian(UInt32(bytes.count))
                body += bytes
            case .int32(let number):
                body.appendLittleEndian(UInt32(3))
                body.appendLittleEndian(UInt32(bitPattern: number))
            case .int64(let number):
                body.appendLittleEndian(UInt32(6))
                body.appendLittleEndian(UInt64(bitPattern: number))
            case .double(let number):
                body.appendLittleEndian(UInt32(9))
                body.appendLittleEndian(number.bitPattern)
            }
        }
        var out: [UInt8] = []
        out.appendLittleEndian(UInt32(0x1F0))
        out.appendLittleEndian(UInt32(0))
        out.appendLittleEndian(UInt64(body.count))
        return out + body
    }

    /// The arguments as objects: archived buffers unarchived, numbers and strings as they are.
    static func decode(_ bytes: [UInt8]) throws -> [ArchivedObject] {
        guard !bytes.isEmpty else { return [] }
        var reader = XPCReader(bytes)
        guard try reader.u32() & 0xFF == 0xF0 else {
            throw TransportError.protocolViolation("DTX: auxiliary data is not a primitive dictionary")
        }
        _ = try reader.u32()
        let length = Int(try reader.u64())
        let end = reader.offset + length
        guard end <= bytes.count else {
            throw TransportError.protocolViolation("DTX: auxiliary data truncated")
        }
        var values: [ArchivedObject] = []
        var isKey = true
        while reader.offset < end {
            let value = try primitive(&reader)
            if !isKey { values.append(value) }
            isKey.toggle()
        }
        return values
    }

    private static func primitive(_ reader: inout XPCReader) throws -> ArchivedObject {
        switch try reader.u32() & 0xFF {
        case 10: return .null
        case 1: return .string(String(decoding: try reader.bytes(Int(try reader.u32())), as: UTF8.self))
        case 2:
            let bytes = try reader.bytes(Int(try reader.u32()))
            return bytes.isEmpty ? .null : try KeyedArchiver.unarchive(bytes)
        case 3: return .int(Int64(Int32(bitPattern: try reader.u32())))
        case 4: return .int(Int64(try reader.u32()))
        case 6: return .int(Int64(bitPattern: try reader.u64()))
        case 9: return .double(Double(bitPattern: try reader.u64()))
        case let other: throw TransportError.protocolViolation("DTX: primitive type \(other)")
        }
    }
}

/// `com.apple.instruments.dtservicehub` behind RSD: the DTX server of iOS 17+ developer services
/// (the channels hadeploy and pymobiledevice3 use: deviceinfo, processcontrol, screenshot).
struct DTXServiceHub {
    let stream: ByteStream
    let runtime: DeviceRuntime

    static let deviceInfo = "com.apple.instruments.server.services.deviceinfo"
    static let processControl = "com.apple.instruments.server.services.processcontrol"
    static let screenshot = "com.apple.instruments.server.services.screenshot"
    /// What the device publishes in its capability handshake (identifier → version).
    static let capabilities: [(String, Int64)] = [
        ("com.apple.private.DTXBlockCompression", 2), ("com.apple.private.DTXConnection", 1),
        (deviceInfo, 113), ("com.apple.instruments.server.services.device.applictionListing", 1),
        (processControl, 107), ("com.apple.instruments.server.services.processcontrol.posixspawn", 1),
        (screenshot, 2), ("com.apple.instruments.server.services.sysmontap", 3),
    ]
    static let served: Set<String> = [deviceInfo, processControl, screenshot]
    static let maximumMessage = 32 * 1024 * 1024

    static func serve(stream: ByteStream, runtime: DeviceRuntime) async {
        await ServiceHost.host("dtservicehub", on: stream, runtime: runtime) {
            try await DTXServiceHub(stream: stream, runtime: runtime).run()
        }
    }

    /// Replies a selector gives: an object, nothing (OK), or an NSError.
    enum Outcome {
        case object(ArchivedObject)
        case ok
        case failure(String)
    }

    func run() async throws {
        var nextIdentifier: UInt32 = 1
        // The device announces its capabilities first.
        let capabilities = ArchivedObject.dictionary(Self.capabilities.map { ($0.0, .int($0.1)) })
        try await send(
            DTXMessage(
                kind: .dispatch, identifier: nextIdentifier, conversationIndex: 0, channel: 0,
                expectsReply: false,
                auxiliary: DTXArguments.encode([.buffer(KeyedArchiver.archive(capabilities))]),
                payload: KeyedArchiver.archive(.string("_notifyOfPublishedCapabilities:"))))
        nextIdentifier += 1
        var channels: [Int32: String] = [:]
        var partial: [UInt32: (expected: Int, fragments: Int, body: [UInt8])] = [:]
        // Set once the launch was answered under `dropDeveloperTunnelAfterLaunch`: the tunnel is cut
        // when the client next sends or closes this connection, or opens another in the tunnel, so the
        // answer has surely arrived (cut at once, the answer could still be in the tunnel's TCP stack
        // and be lost with it) and the next step surely finds it gone, however slow the twin is.
        var cutAfterLaunch = false
        while true {
            var header: ByteBuffer
            do {
                header = try await stream.readAfterIdle(exactly: DTXMessage.fragmentHeaderLength)
            } catch {
                if cutAfterLaunch { await cutTunnelsAfterLaunch() }
                throw error
            }
            if cutAfterLaunch {
                await cutTunnelsAfterLaunch()
                return
            }
            guard header.readInteger(endianness: .little, as: UInt32.self) == DTXMessage.magic else {
                throw TransportError.protocolViolation("DTX: bad fragment magic")
            }
            let headerLength = Int(header.readInteger(endianness: .little, as: UInt32.self)!)
            let index = header.readInteger(endianness: .little, as: UInt16.self)!
            let count = header.readInteger(endianness: .little, as: UInt16.self)!
            let size = Int(header.readInteger(endianness: .little, as: UInt32.self)!)
            let identifier = header.readInteger(endianness: .little, as: UInt32.self)!
            let conversation = header.readInteger(endianness: .little, as: UInt32.self)!
            let channel = Int32(bitPattern: header.readInteger(endianness: .little, as: UInt32.self)!)
            let expectsReply = header.readInteger(endianness: .little, as: UInt32.self)! & 1 != 0
            if headerLength > DTXMessage.fragmentHeaderLength {
                _ = try await stream.read(
                    exactly: headerLength - DTXMessage.fragmentHeaderLength, timeout: .seconds(30))
            }
            guard size <= Self.maximumMessage, count > 0, index < count else {
                throw TransportError.protocolViolation("DTX: fragment \(index)/\(count) of \(size) bytes")
            }
            var body: [UInt8]
            if count > 1 && index == 0 {
                partial[identifier] = (size, Int(count) - 1, [])
                continue
            }
            let chunk =
                size > 0
                ? Array(try await stream.read(exactly: size, timeout: .seconds(30)).readableBytesView) : []
            if count > 1 {
                guard var assembling = partial[identifier] else {
                    throw TransportError.protocolViolation("DTX: fragment of an unknown message")
                }
                assembling.body += chunk
                assembling.fragments -= 1
                guard assembling.fragments == 0 else {
                    partial[identifier] = assembling
                    continue
                }
                partial[identifier] = nil
                body = assembling.body
            } else {
                body = chunk
            }
            guard body.count >= DTXMessage.payloadHeaderLength else {
                throw TransportError.protocolViolation("DTX: message shorter than its payload header")
            }
            var reader = XPCReader(body)
            let kind = DTXMessage.Kind(rawValue: try reader.bytes(4)[0])
            let auxiliaryLength = Int(try reader.u32())
            let total = Int(try reader.u32())
            _ = try reader.u32()
            guard auxiliaryLength <= total, DTXMessage.payloadHeaderLength + total <= body.count else {
                throw TransportError.protocolViolation("DTX: inconsistent message sizes")
            }
            let auxiliary = Array(body[16..<16 + auxiliaryLength])
            let payload = Array(body[(16 + auxiliaryLength)..<(16 + total)])
            // Replies to the device's own messages (none expect one) and anything but a method call.
            guard conversation == 0, kind == .dispatch else { continue }
            let outcome: Outcome
            var launched = false
            do {
                let selector = try KeyedArchiver.unarchive(payload).stringValue ?? ""
                launched = selector.hasPrefix("launchSuspendedProcessWithDevicePath:")
                let arguments = try DTXArguments.decode(auxiliary)
                if channel == 0 {
                    outcome = control(selector, arguments, channels: &channels)
                } else if let service = channels[channel] {
                    outcome = await call(service, selector, arguments)
                } else {
                    outcome = .failure("No channel registered for code \(channel)")
                }
            } catch {
                outcome = .failure("The message could not be decoded: \(error)")
            }
            guard expectsReply else { continue }
            var reply = DTXMessage(
                kind: .ok, identifier: identifier, conversationIndex: conversation + 1, channel: channel,
                expectsReply: false)
            switch outcome {
            case .ok:
                break
            case .object(let object):
                reply.kind = .object
                reply.payload = KeyedArchiver.archive(object)
            case .failure(let description):
                reply.kind = .error
                reply.payload = KeyedArchiver.archive(
                    .error(
                        domain: "DTXMessage", code: 1,
                        userInfo: [("NSLocalizedDescription", .string(description))]))
            }
            try await send(reply)
            if launched, runtime.hasFault("dropDeveloperTunnelAfterLaunch") {
                await runtime.clearFaults(kind: "dropDeveloperTunnelAfterLaunch")
                await runtime.condemnTunnels()
                cutAfterLaunch = true
            }
        }
    }

    private func cutTunnelsAfterLaunch() async {
        guard let cut = await runtime.cutCondemnedTunnels() else { return }
        runtime.logger.info("dtservicehub: the developer tunnel was cut after the launch (\(cut))")
    }

    private func send(_ message: DTXMessage) async throws {
        try await stream.write(message.encoded())
    }

    // MARK: channel 0

    private func control(_ selector: String, _ arguments: [ArchivedObject], channels: inout [Int32: String])
        -> Outcome
    {
        switch selector {
        case "_notifyOfPublishedCapabilities:":
            return .ok
        case "_requestChannelWithCode:identifier:":
            guard arguments.count == 2, let code = arguments[0].intValue,
                let identifier = arguments[1].stringValue
            else { return .failure("_requestChannelWithCode:identifier: needs a code and an identifier") }
            guard Self.served.contains(identifier) else {
                runtime.logger.debug("dtservicehub: no service \(identifier)")
                return .failure("Unable to find service \(identifier)")
            }
            channels[Int32(truncatingIfNeeded: code)] = identifier
            runtime.logger.debug("dtservicehub: channel \(code) is \(identifier)")
            return .ok
        case "_channelCanceled:":
            if let code = arguments.first?.intValue { channels[Int32(truncatingIfNeeded: code)] = nil }
            return .ok
        default:
            return .failure(Self.unrecognized(selector, in: "DTXConnection"))
        }
    }

    /// The wording pymobiledevice3 recognises as "this device does not have that selector".
    static func unrecognized(_ selector: String, in object: String) -> String {
        "Unable to invoke -[\(object) \(selector)] - it does not respond to the selector"
    }

    // MARK: services

    private func call(_ service: String, _ selector: String, _ arguments: [ArchivedObject]) async -> Outcome {
        switch (service, selector) {
        case (Self.deviceInfo, "runningProcesses"):
            return .object(.array(await processes()))
        case (Self.deviceInfo, "isRunningPid:"):
            let pid = arguments.first?.intValue ?? -1
            return .object(.bool(await processes().contains { $0["pid"]?.intValue == pid }))
        case (Self.deviceInfo, "execnameForPid:"):
            let pid = arguments.first?.intValue ?? -1
            let process = await processes().first { $0["pid"]?.intValue == pid }
            return .object(process?["realAppName"] ?? .null)
        case (
            Self.processControl,
            "launchSuspendedProcessWithDevicePath:bundleIdentifier:environment:arguments:options:"
        ):
            return await launch(arguments)
        case (Self.processControl, "killPid:"):
            return await kill(pid: arguments.first?.intValue ?? -1, signal: 9)
        case (Self.processControl, "sendSignal:toPid:"):
            guard arguments.count == 2 else { return .failure("sendSignal:toPid: needs a signal and a pid") }
            return await kill(pid: arguments[1].intValue ?? -1, signal: arguments[0].intValue ?? 0)
        case (Self.processControl, "processIdentifierForBundleIdentifier:"):
            let bundle = arguments.first?.stringValue ?? ""
            let running = await runtime.runningApp
            let pid = running?.bundleIdentifier == bundle ? await runtime.runningProcess?.pid ?? 0 : 0
            return .object(.int(Int64(pid)))
        case (Self.processControl, "isPidDebuggable:"):
            let pid = arguments.first?.intValue ?? -1
            return .object(.bool(await runtime.runningProcess.map { Int64($0.pid) == pid } ?? false))
        case (Self.processControl, "startObservingPid:"), (Self.processControl, "stopObservingPid:"):
            return .ok
        case (Self.screenshot, "takeScreenshot"):
            do {
                return .object(.data(Array(try await ScreenRenderer.screenshot(of: runtime))))
            } catch {
                return .failure("Screenshot failed: \(error)")
            }
        default:
            let object = service.split(separator: ".").last.map {
                "DT\($0.prefix(1).uppercased())\($0.dropFirst())Service"
            }
            return .failure(Self.unrecognized(selector, in: "<\(object ?? "DTXService"): 0x1>"))
        }
    }

    /// `runningProcesses`: the system daemons the twin has, and the foreground app.
    private func processes() async -> [ArchivedObject] {
        let boot = EmulatorClock.now().timeIntervalSince1970 - 3600
        let daemons: [(String, Int, String)] = [
            ("launchd", 1, "/sbin/launchd"),
            (
                "SpringBoard", DeviceRuntime.springBoardPID,
                "/System/Library/CoreServices/SpringBoard.app/SpringBoard"
            ),
            ("installd", DeviceRuntime.installdPID, "/usr/libexec/installd"),
            ("ReportCrash", DeviceRuntime.reportCrashPID, "/System/Library/CoreServices/ReportCrash"),
            ("remoted", 34, "/usr/libexec/remoted"),
            ("lockdownd", 41, "/usr/libexec/lockdownd"),
            ("DTServiceHub", 211, "/usr/libexec/dtservicehub"),
        ]
        var list: [ArchivedObject] = daemons.map { name, pid, path in
            ArchivedObject.dictionary([
                ("isApplication", .bool(name == "SpringBoard")), ("name", .string(name)),
                ("pid", .int(Int64(pid))),
                ("realAppName", .string(path)), ("startDate", .date(boot)),
            ])
        }
        if let process = await runtime.runningProcess, let app = await runtime.runningApp,
            let installed = await runtime.app(bundleIdentifier: app.bundleIdentifier)
        {
            list.append(
                .dictionary([
                    ("bundleIdentifier", .string(app.bundleIdentifier)), ("isApplication", .bool(true)),
                    ("name", .string(process.executable)), ("pid", .int(Int64(process.pid))),
                    ("realAppName", .string(installed.path + "/" + installed.executable)),
                    ("startDate", .date(EmulatorClock.now().timeIntervalSince1970)),
                ]))
        }
        return list
    }

    /// `launchSuspendedProcessWithDevicePath:…`: the app runs exactly as a debugserver launch
    /// makes it run (its arguments, its environment, its log), replacing the foreground app.
    private func launch(_ arguments: [ArchivedObject]) async -> Outcome {
        guard arguments.count == 5, let bundle = arguments[1].stringValue else {
            return .failure("launchSuspendedProcessWithDevicePath: needs five arguments")
        }
        guard let app = await runtime.app(bundleIdentifier: bundle) else {
            return .failure(
                "The operation couldn’t be completed. Application info provider (FBSApplicationLibrary) returned nil for \"\(bundle)\""
            )
        }
        if runtime.hasFault("passcodeLocked") || runtime.hasFault("beforeFirstUnlock") {
            return .failure(
                "The request to open \"\(bundle)\" failed. The request was denied by service delegate (SBMainWorkspace) for reason: Security (\"Unable to launch \(bundle) because the device was not, or could not be, unlocked\")."
            )
        }
        var environment: [String] = []
        if case .dictionary(let entries) = arguments[2] {
            environment = entries.map { "\($0.0)=\($0.1.stringValue ?? $0.1.description)" }
        }
        var argv = [app.path + "/" + app.executable]
        if case .array(let items) = arguments[3] {
            argv += items.map { $0.stringValue ?? $0.description }
        }
        let killExisting = arguments[4]["KillExisting"]?.boolValue ?? false
        if !killExisting, let running = await runtime.runningApp, running.bundleIdentifier == bundle,
            let process = await runtime.runningProcess
        {
            return .object(.int(Int64(process.pid)))
        }
        if runtime.hasFault("crashOnLaunch") {
            await runtime.crashAtLaunch(app, arguments: argv, environment: environment)
        } else {
            _ = await runtime.launch(app, arguments: argv, environment: environment)
        }
        let pid = await runtime.runningProcess?.pid ?? 0
        runtime.logger.info("dtservicehub: launched \(bundle) as pid \(pid)")
        return .object(.int(Int64(pid)))
    }

    private func kill(pid: Int64, signal: Int64) async -> Outcome {
        guard let process = await runtime.runningProcess, Int64(process.pid) == pid else {
            return .failure("No such process: \(pid)")
        }
        if [9, 15, 6, 2, 3].contains(signal) {
            await runtime.terminateRunningApp(reason: "killed (signal \(signal))")
        }
        return .ok
    }
}
