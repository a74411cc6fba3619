import HADeployCore

/// A byte pipe to debugserver (the service connection, with TLS on iOS ≥ 14).
protocol GDBTransport: AnyObject {
    func send(_ bytes: [UInt8]) throws
    /// Returns what arrived within the timeout; empty when nothing did.
    func receive(maximum: Int, timeoutMilliseconds: UInt32) throws -> [UInt8]
}

/// The GDB remote client hadeploy needs: launch with arguments and environment, detach so the
/// app keeps running, kill. Synchronous; runs on the device's worker, every read bounded by the
/// caller's deadline.
///
/// Ack mode stays on (the device sends `+` before each reply and expects `+` for each packet it
/// sends) — 1.3.0's idevicedebug never turns it off, so that is what devices are known to do.
final class GDBRemoteClient {
    private let transport: any GDBTransport
    private let identity: DeviceIdentity
    private var buffer: [UInt8] = []
    /// Deadlines are readings of this clock (`clock.deadline(after:)`).
    let clock: any WallClock

    init(transport: any GDBTransport, identity: DeviceIdentity, clock: any WallClock) {
        self.transport = transport
        self.identity = identity
        self.clock = clock
    }

    /// Sends a packet and returns the reply payload; `step` names the request in errors (never the
    /// payload itself, which may carry secret arguments).
    /// `last`: the device closes the connection right after answering (`D`, `k`), so failing to
    /// acknowledge that reply is not an error.
    func request(_ payload: String, step: String, deadline: ContinuousClock.Instant, last: Bool = false)
        throws
        -> String
    {
        try sendPacket(payload, step: step, deadline: deadline)
        guard let reply = try readPacket(until: deadline, step: step, ackMayFail: last) else {
            throw timeout(step)
        }
        return reply
    }

    /// Sends a packet without waiting for a reply (continue).
    /// With `expectAck: false` (continue), the ack is left for `readPacket` to skip: a device may
    /// send it only together with the eventual stop reply.
    func sendPacket(
        _ payload: String, step: String, deadline: ContinuousClock.Instant, expectAck: Bool = true
    ) throws {
        try transport.send(GDBPacket.encode(payload))
        guard expectAck else { return }
        // The device acknowledges with '+'; '-' asks for a resend.
        var resends = 0
        while true {
            guard let byte = try readByte(until: deadline) else { throw timeout(step) }
            if byte == UInt8(ascii: "+") { return }
            if byte == UInt8(ascii: "-") {
                resends += 1
                guard resends <= 3 else {
                    throw protocolError(step, "the device rejected the packet 3 times")
                }
                try transport.send(GDBPacket.encode(payload))
                continue
            }
            // Not an ack: the device may run without acks; keep the byte for the packet reader.
            buffer.insert(byte, at: 0)
            return
        }
    }

    /// Sends the interrupt byte (0x03), which stops a running inferior.
    func interrupt() throws {
        try transport.send([0x03])
    }

    /// The next packet's payload, or nil when none completed before `deadline`.
    func readPacket(until deadline: ContinuousClock.Instant, step: String, ackMayFail: Bool = false) throws
        -> String?
    {
        while true {
            // Skip acks and noise until a packet starts.
            var start: UInt8?
            repeat {
                guard let byte = try readByte(until: deadline) else { return nil }
                start = byte
            } while start != UInt8(ascii: "$")
            var raw: [UInt8] = []
            while true {
                guard let byte = try readByte(until: deadline) else { return nil }
                if byte == UInt8(ascii: "#") { break }
                raw.append(byte)
                guard raw.count <= 1 << 20 else { throw protocolError(step, "a reply longer than 1 MiB") }
            }
            guard let high = try readByte(until: deadline), let low = try readByte(until: deadline) else {
                return nil
            }
            guard let h = GDBPacket.nibble(high), let l = GDBPacket.nibble(low),
                h << 4 | l == GDBPacket.checksum(raw)
            else {
                try transport.send([UInt8(ascii: "-")])
                continue
            }
            do {
                try transport.send([UInt8(ascii: "+")])
            } catch  where ackMayFail {
            }
            return String(decoding: GDBPacket.decodePayload(raw), as: UTF8.self)
        }
    }

    private func readByte(until deadline: ContinuousClock.Instant) throws -> UInt8? {
        while buffer.isEmpty {
            let remaining = clock.remaining(until: deadline)
            guard remaining > .zero else { return nil }
            let millis = min(max(remaining.milliseconds, 1), 250)
            buffer = try transport.receive(maximum: 4096, timeoutMilliseconds: UInt32(millis))
        }
        return buffer.removeFirst()
    }

    private func timeout(_ step: String) -> MobileDeviceError {
        MobileDeviceError(
            .deadlineExceeded, step: step, device: identity, reason: "debugserver did not answer in time",
            nextStep: "Keep the device unlocked; if the app hangs at launch, check it with Xcode.",
            isTransient: true)
    }

    private func protocolError(_ step: String, _ reason: String) -> MobileDeviceError {
        MobileDeviceError(
            .protocolError, step: step, device: identity, reason: reason,
            nextStep: "Replug the device and retry.")
    }
}

extension Duration {
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
