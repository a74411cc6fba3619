import Foundation
import NIOCore

/// RemoteServiceDiscovery on the tunnel's RSD port: HTTP/2 (RFC 9113) carrying RemoteXPC messages.
///
/// The host opens stream 1 (root channel) and stream 3 (reply channel) with empty HEADERS, sends an
/// empty XPC dictionary and the init-handshake wrapper, then its `Handshake`; the device answers
/// with its own `Handshake`: the device's properties and the `Services` it lists with their ports.
/// Only the frames this exchange uses carry meaning here; HPACK is never needed (no header fields).
struct RSDService {
    let stream: ByteStream
    let runtime: DeviceRuntime
    let table: RSDServiceTable

    static let clientPreface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
    static let maximumFrameSize = 1 << 20
    /// What the device grants: its receive window per stream (SETTINGS) and on the connection.
    static let initialWindowSize: UInt32 = 1 << 20

    enum FrameType: UInt8 {
        case data = 0
        case headers = 1
        case priority = 2
        case rstStream = 3
        case settings = 4
        case pushPromise = 5
        case ping = 6
        case goAway = 7
        case windowUpdate = 8
        case continuation = 9
    }

    static let endHeaders: UInt8 = 0x4
    static let ack: UInt8 = 0x1
    static let padded: UInt8 = 0x8

    static func serve(stream: ByteStream, runtime: DeviceRuntime, table: RSDServiceTable) async {
        await ServiceHost.host("RSD", on: stream, runtime: runtime) {
            try await RSDService(stream: stream, runtime: runtime, table: table).run()
        }
    }

    func run() async throws {
        let preface = try await stream.read(exactly: Self.clientPreface.count, timeout: .seconds(30))
        guard Array(preface.readableBytesView) == Self.clientPreface else {
            throw TransportError.protocolViolation("RSD: not an HTTP/2 client preface")
        }
        // The server preface is a SETTINGS frame; the host reads nothing else before it.
        var settings: [UInt8] = []
        for (identifier, value) in [(UInt16(3), UInt32(100)), (UInt16(4), Self.initialWindowSize)] {
            settings.appendBigEndian(identifier)
            settings.appendBigEndian(value)
        }
        var increment: [UInt8] = []
        increment.appendBigEndian(Self.initialWindowSize - 65_535)
        try await stream.write(
            Self.frame(.settings, flags: 0, stream: 0, settings)
                + Self.frame(.windowUpdate, flags: 0, stream: 0, increment))

        var pending: [UInt32: [UInt8]] = [:]
        var answeredStreams: Set<UInt32> = []
        var nextMessageID: UInt64 = 0
        while true {
            var header = try await stream.readAfterIdle(exactly: 9)
            let length =
                Int(header.readInteger(as: UInt8.self)!) << 16
                | Int(header.readInteger(endianness: .big, as: UInt16.self)!)
            let rawType = header.readInteger(as: UInt8.self)!
            let flags = header.readInteger(as: UInt8.self)!
            let streamID = header.readInteger(endianness: .big, as: UInt32.self)! & 0x7FFF_FFFF
            guard length <= Self.maximumFrameSize else {
                throw TransportError.protocolViolation("RSD: a \(length)-byte HTTP/2 frame")
            }
            var payload =
                length > 0 ? try await stream.read(exactly: length, timeout: .seconds(30)) : ByteBuffer()
            switch FrameType(rawValue: rawType) {
            case .settings where flags & Self.ack == 0:
                try await stream.write(Self.frame(.settings, flags: Self.ack, stream: 0, []))
            case .ping where flags & Self.ack == 0:
                try await stream.write(
                    Self.frame(.ping, flags: Self.ack, stream: 0, Array(payload.readableBytesView)))
            case .goAway:
                return
            case .data:
                if flags & Self.padded != 0, let padding = payload.readInteger(as: UInt8.self) {
                    payload =
                        payload.getSlice(
                            at: payload.readerIndex, length: max(0, payload.readableBytes - Int(padding)))
                        ?? ByteBuffer()
                }
                if length > 0 {
                    // Give back at once what the host spent of both windows.
                    var update: [UInt8] = []
                    update.appendBigEndian(UInt32(length))
                    try await stream.write(
                        Self.frame(.windowUpdate, flags: 0, stream: 0, update)
                            + Self.frame(.windowUpdate, flags: 0, stream: streamID, update))
                }
                pending[streamID, default: []] += Array(payload.readableBytesView)
                while let message = try XPCWrapper.take(from: &pending[streamID, default: []]) {
                    var replies: [XPCWrapper] = []
                    if message.flags.contains(.initHandshake) {
                        replies.append(
                            XPCWrapper(flags: [.alwaysSet, .initHandshake], messageID: 0, payload: nil))
                    } else if message.payload?["MessageType"]?.stringValue == "Handshake" {
                        let info = await peerInfo()
                        replies.append(
                            XPCWrapper(
                                flags: [.alwaysSet, .dataPresent], messageID: nextMessageID, payload: info))
                        nextMessageID += 2
                        runtime.logger.debug("RSD: handshake answered with \(table.entries.count) services")
                    } else if case .dictionary(let entries) = message.payload, entries.isEmpty,
                        message.messageID == 0
                    {
                        replies.append(XPCWrapper(flags: .alwaysSet, messageID: 0, payload: .dictionary([])))
                    }
                    var out: [UInt8] = []
                    for reply in replies {
                        if !answeredStreams.contains(streamID) {
                            answeredStreams.insert(streamID)
                            out += Self.frame(.headers, flags: Self.endHeaders, stream: streamID, [])
                        }
                        out += Self.frame(.data, flags: 0, stream: streamID, reply.encoded())
                    }
                    if !out.isEmpty { try await stream.write(out) }
                }
            default:
                // HEADERS (empty blocks), PRIORITY, RST_STREAM, WINDOW_UPDATE, SETTINGS ACK, PING ACK.
                break
            }
        }
    }

    static func frame(_ type: FrameType, flags: UInt8, stream: UInt32, _ payload: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [
            UInt8(payload.count >> 16 & 0xFF), UInt8(payload.count >> 8 & 0xFF), UInt8(payload.count & 0xFF),
        ]
        out += [type.rawValue, flags]
        out.appendBigEndian(stream & 0x7FFF_FFFF)
        return out + payload
    }

    /// The device's `Handshake`: who it is and what it serves on this tunnel.
    func peerInfo() async -> XPCValue {
        let profile = runtime.profile
        let identity = runtime.identity
        let model = runtime.model
        let bootCount = await runtime.bootCount
        return .dictionary([
            ("MessageType", .string("Handshake")),
            ("MessagingProtocolVersion", .uint64(7)),
            (
                "Properties",
                .dictionary(
                    Self.properties(profile: profile, identity: identity, model: model, bootCount: bootCount))
            ),
            ("Services", table.peerInfoServices),
            ("UUID", .uuid(Self.stableUUID("device-\(identity.udid)"))),
        ])
    }

    static func properties(
        profile: VirtualDeviceProfile, identity: DeviceIdentity, model: VirtualDeviceProfile.Model?,
        bootCount: Int
    ) -> [(String, XPCValue)] {
        [
            ("AppleInternal", .bool(false)),
            ("BoardId", .uint64(UInt64(model?.chipID == 0x8140 ? 12 : 2))),
            // A new one at each boot, as on a device.
            ("BootSessionUUID", .string(stableUUID("boot-\(identity.udid)-\(bootCount)").uuidString)),
            ("BuildVersion", .string(profile.buildVersion)),
            (
                "CPUArchitecture",
                .string(profile.cpuArchitecture == "arm64" ? "arm64e" : profile.cpuArchitecture)
            ),
            ("CertificateProductionStatus", .bool(true)),
            ("CertificateSecurityMode", .bool(true)),
            ("ChipID", .uint64(UInt64(model?.chipID ?? 0))),
            ("DeviceClass", .string(profile.deviceClass)),
            ("DeviceColor", .string("1")),
            ("DeviceEnclosureColor", .string("1")),
            ("DeviceSupportsLockdown", .bool(true)),
            ("EffectiveProductionStatusAp", .bool(true)),
            ("EffectiveProductionStatusSEP", .bool(true)),
            ("EffectiveSecurityModeAp", .bool(true)),
            ("EffectiveSecurityModeSEP", .bool(true)),
            ("EthernetMacAddress", .string(identity.wifiAddress)),
            ("HWModelStr", .string(profile.hardwareModel)),
            ("HardwarePlatform", .string(model?.platform ?? "")),
            ("HasSEP", .bool(true)),
            ("HumanReadableProductVersionString", .string(profile.productVersion)),
            ("Image4CryptoHashMethod", .string("sha2-384")),
            ("Image4Supported", .bool(true)),
            ("IsUIBuild", .bool(true)),
            ("IsVirtualDevice", .bool(false)),
            ("MobileDeviceMinimumVersion", .string("1600")),
            ("ModelNumber", .string(model?.modelNumber ?? "")),
            ("OSInstallEnvironment", .bool(false)),
            ("OSVersion", .string(profile.productVersion)),
            ("ProductName", .string("iPhone OS")),
            ("ProductType", .string(profile.productType)),
            ("RegionCode", .string("LL")),
            ("RegionInfo", .string("LL/A")),
            ("RemoteXPCVersionFlags", .uint64(0x0100_0000_0000_0006)),
            ("SecurityDomain", .uint64(1)),
            ("SensitivePropertiesVisible", .bool(true)),
            ("SerialNumber", .string(identity.serialNumber)),
            ("SigningFuse", .bool(true)),
            ("StoreDemoMode", .bool(false)),
            ("SupplementalBuildVersion", .string(profile.buildVersion)),
            ("ThinningProductType", .string(profile.productType)),
            ("UniqueChipID", .uint64(identity.uniqueChipID)),
            ("UniqueDeviceID", .string(identity.udid)),
        ]
    }

    /// A UUID derived from `seed` (the same device and boot give the same one).
    static func stableUUID(_ seed: String) -> UUID {
        var bytes = [UInt8](repeating: 0, count: 16)
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for (index, byte) in seed.utf8.enumerated() {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
            bytes[index % 16] ^= UInt8(truncatingIfNeeded: hash >> 29)
        }
        for index in 0..<16 {
            hash = (hash ^ UInt64(index)) &* 0x100_0000_01b3
            bytes[index] ^= UInt8(truncatingIfNeeded: hash >> 17)
        }
        bytes[6] = bytes[6] & 0x0F | 0x40
        bytes[8] = bytes[8] & 0x3F | 0x80
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8],
                bytes[9],
                bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }
}
