import NIOCore

/// One TCP connection the host opened to the device through the tunnel (RFC 9293, passive open).
///
/// The service side is a ``TunnelAppBridge``: bytes from the host go to it in order, bytes it
/// writes are segmented by the host's MSS and window, its close becomes our FIN. Confined to the
/// tunnel's event loop, like ``TunnelNetwork``.
final class TunnelTCPConnection: @unchecked Sendable {
    enum State {
        case synReceived, established, closeWait, lastAck, finWait1, finWait2, closing, closed
    }

    private unowned let network: TunnelNetwork
    let key: TunnelNetwork.ConnectionKey
    private let accept: TunnelNetwork.Accept
    private(set) var state = State.synReceived

    // Send side. `sendBuffer` holds the bytes from `sendUnacknowledged` on (sent or not).
    private let initialSequence = UInt32.random(in: 0...UInt32.max)
    private var sendUnacknowledged: UInt32
    private var sendNext: UInt32
    private var sendWindow: UInt32 = 0
    private var sendMSS: Int
    /// The host's window scale (RFC 7323): 0 when its SYN offered none. When it offers one, the
    /// device answers with its own (non-zero: pymobiledevice3's stack takes a scale of 0 for no
    /// option and then cannot advertise its 4 MiB window).
    private let peerWindowShift: UInt32
    private let offersWindowScale: Bool
    private let windowShift: Int
    private let maximumReceiveWindow: Int
    private var sendBuffer = ByteBuffer()
    private var serviceClosed = false
    private var finSent = false
    private var finAcknowledged = false

    // Receive side.
    private var receiveNext: UInt32
    private var peerFinished = false
    private var lastAdvertisedWindow = 0

    // The service end.
    private var bridge: TunnelAppBridge?
    private var waitingForBridge: [ByteBuffer] = []
    private var bytesTowardService = 0
    private var serviceReadsPaused = false

    // Retransmission.
    private var timer: Scheduled<Void>?
    private var timeouts = 0

    /// The device's window scale and its receive window when the host scales windows.
    static let windowShift = 4
    static let scaledReceiveWindow = 512 * 1024
    /// The service's bytes buffered here before its reads are held back.
    static let sendBufferLimit = 1 << 20
    static let initialTimeout = TimeAmount.milliseconds(250)
    static let maximumTimeout = TimeAmount.seconds(4)
    /// Consecutive timeouts after which the host is taken for gone: about 108 s with the backoff
    /// above (12, about 36 s, dropped a 4 MB AFC push whose client was starved of CPU; iOS itself
    /// keeps retransmitting for minutes).
    static let maximumTimeouts = 30

    init(
        network: TunnelNetwork, key: TunnelNetwork.ConnectionKey, syn: TCPSegment,
        accept: @escaping TunnelNetwork.Accept
    ) {
        self.network = network
        self.key = key
        self.accept = accept
        sendUnacknowledged = initialSequence
        sendNext = initialSequence &+ 1
        receiveNext = syn.sequence &+ 1
        sendWindow = UInt32(syn.window)
        offersWindowScale = syn.windowScale != nil
        windowShift = offersWindowScale ? Self.windowShift : 0
        maximumReceiveWindow = offersWindowScale ? Self.scaledReceiveWindow : 65_535
        lastAdvertisedWindow = maximumReceiveWindow
        peerWindowShift = UInt32(min(syn.windowScale ?? 0, 14))
        // RFC 9293 §3.7.1: 536 when the SYN carries no MSS option.
        sendMSS = min(syn.maximumSegmentSize ?? 536, network.maximumSegmentSize)
    }

    // MARK: events from the host

    func start() {
        sendSynAcknowledgment()
        armTimer()
        TunnelAppBridge.open(for: self, on: network.loop, accept: accept)
    }

    func receive(_ segment: TCPSegment) {
        if segment.flags.contains(.rst) {
            // Accept a reset in the window only (RFC 5961 would challenge the rest).
            let offset = segment.sequence &- receiveNext
            if segment.sequence == receiveNext || offset < UInt32(maximumReceiveWindow) {
                network.logger.trace("tunnel: port \(key.localPort) reset by the host")
                abort(sendReset: false)
            }
            return
        }
        if segment.flags.contains(.syn) {
            if state == .synReceived && segment.sequence &+ 1 == receiveNext {
                sendSynAcknowledgment()  // our SYN-ACK was lost: the host repeats its SYN
            } else {
                sendAcknowledgment()
            }
            return
        }
        guard segment.flags.contains(.ack) else { return }
        if state == .synReceived {
            guard segment.acknowledgment == initialSequence &+ 1 else {
                network.reset(answering: segment, from: key.remoteAddress)
                return
            }
            state = .established
            sendUnacknowledged = segment.acknowledgment
            cancelTimer()
        }
        processAcknowledgment(segment)
        var mustAcknowledge = false
        if segment.payload.readableBytes > 0 || segment.flags.contains(.fin) {
            mustAcknowledge = true
            processData(segment)
        }
        if state == .closed {
            if mustAcknowledge { sendAcknowledgment() }
            finish()
            return
        }
        let sent = output()
        if mustAcknowledge && !sent { sendAcknowledgment() }
    }

    private func processAcknowledgment(_ segment: TCPSegment) {
        let ack = segment.acknowledgment
        if ack.isAfter(sendNext) {
            sendAcknowledgment()  // acknowledges what was never sent
            return
        }
        if ack.isAfter(sendUnacknowledged) {
            var acknowledged = Int(ack &- sendUnacknowledged)
            let data = min(acknowledged, sendBuffer.readableBytes)
            sendBuffer.moveReaderIndex(forwardBy: data)
            sendBuffer.discardReadBytes()
            acknowledged -= data
            if finSent && acknowledged > 0 { finAcknowledged = true }
            sendUnacknowledged = ack
            timeouts = 0
            cancelTimer()
            if sendNext != sendUnacknowledged { armTimer() }
            resumeServiceReadsIfRoom()
        }
        if !ack.isBefore(sendUnacknowledged) {
            sendWindow = UInt32(segment.window) << peerWindowShift
            // Probing a closed window: a host that answers the probes is there, however long its
            // window stays closed (RFC 9293 3.8.6.1); only unanswered retransmissions count.
            if sendWindow == 0 && ack == sendUnacknowledged { timeouts = 0 }
        }
        if finAcknowledged {
            switch state {
            case .finWait1: state = .finWait2
            case .closing, .lastAck: state = .closed
            default: break
            }
        }
        if sendWindow > 0 && sendNext == sendUnacknowledged && sendBuffer.readableBytes > 0 {
            cancelTimer()  // a window opened after a probe: send at once
        }
    }

    private func processData(_ segment: TCPSegment) {
        var payload = segment.payload
        var sequence = segment.sequence
        if sequence.isBefore(receiveNext) {
            // A retransmission overlapping what we have: keep only the new part.
            let overlap = Int(receiveNext &- sequence)
            guard overlap <= payload.readableBytes else { return }
            payload.moveReaderIndex(forwardBy: overlap)
            sequence = receiveNext
        }
        // Ahead of what we expect (a lost segment before it): dropped, the ACK asks again.
        guard sequence == receiveNext, !peerFinished else { return }
        if payload.readableBytes > 0 {
            receiveNext &+= UInt32(payload.readableBytes)
            deliverToService(payload)
        }
        if segment.flags.contains(.fin) {
            receiveNext &+= 1
            peerFinished = true
            bridge?.closeOutput()
            switch state {
            case .established, .synReceived: state = .closeWait
            case .finWait1: state = finAcknowledged ? .closed : .closing
            case .finWait2: state = .closed
            default: break
            }
        }
    }

    // MARK: events from the service

    func serviceAttached(_ bridge: TunnelAppBridge) {
        guard state != .closed else {
            bridge.close()
            return
        }
        self.bridge = bridge
        for buffer in waitingForBridge { bridge.write(buffer) }
        waitingForBridge.removeAll()
        if peerFinished { bridge.closeOutput() }
        bridge.read()
    }

    func serviceCouldNotStart(_ error: Error) {
        network.logger.debug("tunnel: no service for port \(key.localPort): \(error)")
        abort(sendReset: true)
    }

    func serviceSent(_ buffer: ByteBuffer) {
        guard !serviceClosed, state != .closed else { return }
        var buffer = buffer
        sendBuffer.writeBuffer(&buffer)
        if sendBuffer.readableBytes >= Self.sendBufferLimit { serviceReadsPaused = true }
        output()
    }

    var wantsServiceBytes: Bool { !serviceReadsPaused }

    /// The service closed its end (or its whole connection): FIN once the buffered bytes are out.
    func serviceFinished() {
        guard !serviceClosed else { return }
        serviceClosed = true
        if state == .synReceived {
            abort(sendReset: true)
            return
        }
        output()
    }

    func wroteTowardService(_ count: Int) {
        bytesTowardService -= count
        // A window that was nearly shut and reopened is announced at once (no waiting for data).
        if lastAdvertisedWindow < maximumReceiveWindow / 4 && receiveWindow() >= maximumReceiveWindow / 2 {
            sendAcknowledgment()
        }
    }

    // MARK: sending

    private func receiveWindow() -> Int { max(0, maximumReceiveWindow - bytesTowardService) }

    private func segment(_ flags: TCPFlags, sequence: UInt32, payload: ByteBuffer = ByteBuffer())
        -> TCPSegment
    {
        // The window of a SYN is never scaled (RFC 7323 §2.2).
        let window = flags.contains(.syn) ? min(receiveWindow(), 65_535) : receiveWindow()
        let field = flags.contains(.syn) ? window : min(window >> windowShift, 65_535)
        if !flags.contains(.syn) { lastAdvertisedWindow = field << windowShift }
        return TCPSegment(
            sourcePort: key.localPort, destinationPort: key.remotePort, sequence: sequence,
            acknowledgment: receiveNext, flags: flags, window: UInt16(field), maximumSegmentSize: nil,
            payload: payload)
    }

    private func sendSynAcknowledgment() {
        var synAck = segment([.syn, .ack], sequence: initialSequence)
        synAck.maximumSegmentSize = network.maximumSegmentSize
        if offersWindowScale { synAck.windowScale = UInt8(windowShift) }
        network.send(synAck, to: key.remoteAddress)
    }

    private func sendAcknowledgment() {
        network.send(segment(.ack, sequence: sendNext), to: key.remoteAddress)
    }

    /// Sends what the window allows, then the FIN when the service is done. True if anything went.
    @discardableResult
    private func output() -> Bool {
        guard state == .established || state == .closeWait, !finSent else { return false }
        var sent = false
        var offset = Int(sendNext &- sendUnacknowledged)
        while offset < sendBuffer.readableBytes {
            let usable = Int(sendWindow) - offset
            guard usable > 0 else { break }
            let length = min(sendMSS, usable, sendBuffer.readableBytes - offset)
            let slice = sendBuffer.getSlice(at: sendBuffer.readerIndex + offset, length: length)!
            network.send(segment([.ack, .psh], sequence: sendNext, payload: slice), to: key.remoteAddress)
            sendNext &+= UInt32(length)
            offset += length
            sent = true
        }
        if serviceClosed && offset == sendBuffer.readableBytes {
            network.send(segment([.ack, .fin], sequence: sendNext), to: key.remoteAddress)
            sendNext &+= 1
            finSent = true
            sent = true
            state = state == .closeWait ? .lastAck : .finWait1
        }
        if sendNext != sendUnacknowledged || offset < sendBuffer.readableBytes { armTimer() }
        return sent
    }

    /// Timeout: resend everything in flight (the host dropped it), or probe a closed window.
    private func retransmit() {
        timer = nil
        timeouts += 1
        guard timeouts <= Self.maximumTimeouts else {
            network.logger.debug("tunnel: port \(key.localPort): the host stopped answering")
            abort(sendReset: true)
            return
        }
        switch state {
        case .synReceived:
            sendSynAcknowledgment()
        case .closed:
            return
        default:
            let inFlight = Int(sendNext &- sendUnacknowledged) - (finSent ? 1 : 0)
            if inFlight == 0 && !finSent && sendBuffer.readableBytes > 0 {
                // Zero-window probe: one byte past the window makes the host say its window.
                let probe = sendBuffer.getSlice(at: sendBuffer.readerIndex, length: 1)!
                network.send(segment([.ack], sequence: sendNext, payload: probe), to: key.remoteAddress)
                sendNext &+= 1
            } else {
                var offset = 0
                while offset < inFlight {
                    let length = min(sendMSS, inFlight - offset)
                    let slice = sendBuffer.getSlice(at: sendBuffer.readerIndex + offset, length: length)!
                    network.send(
                        segment(
                            [.ack, .psh], sequence: sendUnacknowledged &+ UInt32(offset), payload: slice),
                        to: key.remoteAddress)
                    offset += length
                }
                if finSent && !finAcknowledged {
                    network.send(
                        segment([.ack, .fin], sequence: sendUnacknowledged &+ UInt32(inFlight)),
                        to: key.remoteAddress)
                }
            }
        }
        armTimer()
    }

    private func armTimer() {
        guard timer == nil, state != .closed else { return }
        var timeout = Self.initialTimeout
        for _ in 0..<min(timeouts, 5) { timeout = timeout * 2 }
        timeout = min(timeout, Self.maximumTimeout)
        timer = network.loop.scheduleTask(in: timeout) { [weak self] in self?.retransmit() }
    }

    private func cancelTimer() {
        timer?.cancel()
        timer = nil
    }

    // MARK: the service end

    private func deliverToService(_ payload: ByteBuffer) {
        bytesTowardService += payload.readableBytes
        if let bridge {
            bridge.write(payload)
        } else {
            waitingForBridge.append(payload)
        }
    }

    private func resumeServiceReadsIfRoom() {
        guard serviceReadsPaused, sendBuffer.readableBytes < Self.sendBufferLimit / 2 else { return }
        serviceReadsPaused = false
        bridge?.read()
    }

    // MARK: ending

    /// Both sides are done: forget the connection (no TIME-WAIT: the tunnel does not reorder).
    private func finish() {
        state = .closed
        cancelTimer()
        network.remove(key)
        bridge?.close()
        bridge = nil
    }

    func abort(sendReset: Bool) {
        if sendReset && state != .closed {
            network.send(segment([.rst, .ack], sequence: sendNext), to: key.remoteAddress)
        }
        finish()
    }
}
