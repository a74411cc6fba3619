/// GDB remote serial protocol framing: `$payload#cs`, cs = sum of payload bytes mod 256 in two
/// hex digits (PROTOCOL.md §7.2), with `}` escaping and `*` run-length encoding.
public enum GDBPacket {
    /// Frames a payload; `#`, `$`, `}` and `*` are escaped as `}` + (byte ^ 0x20).
    public static func encode(_ payload: String) -> [UInt8] {
        var body: [UInt8] = []
        for byte in payload.utf8 {
            if byte == UInt8(ascii: "#") || byte == UInt8(ascii: "$") || byte == UInt8(ascii: "}")
                || byte == UInt8(ascii: "*")
            {
                body.append(UInt8(ascii: "}"))
                body.append(byte ^ 0x20)
            } else {
                body.append(byte)
            }
        }
        let checksum = checksum(body)
        return [UInt8(ascii: "$")] + body + [UInt8(ascii: "#")] + Array(hexByte(checksum).utf8)
    }

    public static func checksum<S: Sequence>(_ bytes: S) -> UInt8 where S.Element == UInt8 {
        bytes.reduce(UInt8(0)) { $0 &+ $1 }
    }

    /// Uppercase, as libimobiledevice writes it (the device accepts either case).
    static func hexByte(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 0xF)]], as: UTF8.self)
    }

    /// Hex of the UTF-8 bytes of `text` (arguments, environment, paths).
    public static func hexEncode(_ text: String) -> String {
        text.utf8.map(hexByte).joined()
    }

    public static func hexDecode(_ hex: String) -> String? {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = nibble(digits[index]), let low = nibble(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return digit - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// The `A` packet: `A<2×len>,<index>,<hex>` per argument, comma-separated (PROTOCOL.md §7.2).
    public static func launchArguments(_ arguments: [String]) -> String {
        let groups = arguments.enumerated().map { index, argument in
            let hex = hexEncode(argument)
            return "\(hex.utf8.count),\(index),\(hex)"
        }
        return "A" + groups.joined(separator: ",")
    }

    /// Undoes `}` escapes and `*` run-length encoding in a received payload.
    public static func decodePayload(_ raw: [UInt8]) -> [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(raw.count)
        var index = 0
        while index < raw.count {
            let byte = raw[index]
            if byte == UInt8(ascii: "}"), index + 1 < raw.count {
                result.append(raw[index + 1] ^ 0x20)
                index += 2
            } else if byte == UInt8(ascii: "*"), let last = result.last, index + 1 < raw.count {
                // The count character minus 29 is how many more times the previous byte repeats.
                let repeats = Int(raw[index + 1]) - 29
                if repeats > 0 { result.append(contentsOf: repeatElement(last, count: repeats)) }
                index += 2
            } else {
                result.append(byte)
                index += 1
            }
        }
        return result
    }
}

/// What a stop or exit reply says about the inferior.
public enum GDBStopReply: Equatable, Sendable {
    /// `T`/`S`: stopped by a signal (e.g. 0x11 SIGSTOP after an interrupt, 0x06 SIGABRT on a crash).
    case stopped(signal: UInt8)
    /// `W`: exited with a status.
    case exited(status: UInt8)
    /// `X`: terminated by a signal.
    case terminated(signal: UInt8)

    public init?(_ payload: String) {
        let bytes = Array(payload.utf8)
        guard bytes.count >= 3, let high = GDBPacket.nibble(bytes[1]), let low = GDBPacket.nibble(bytes[2])
        else {
            return nil
        }
        let value = high << 4 | low
        switch bytes[0] {
        case UInt8(ascii: "T"), UInt8(ascii: "S"): self = .stopped(signal: value)
        case UInt8(ascii: "W"): self = .exited(status: value)
        case UInt8(ascii: "X"): self = .terminated(signal: value)
        default: return nil
        }
    }

    /// SIGINT/SIGSTOP/SIGTRAP: what an interrupt or a fresh launch shows, not a crash.
    public var isBenignStop: Bool {
        if case .stopped(let signal) = self { return [0x02, 0x05, 0x11, 0x13].contains(signal) }
        return false
    }
}
