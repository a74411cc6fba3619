import CLibSSH
import Foundation
import HADeployCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The forwarding loop of `UsbmuxForwarder`. Runs on the SSH connection's queue (it owns the session
/// while it runs) and touches libssh only from there.
final class ForwardPump: @unchecked Sendable {
    private let session: SessionHandle
    private let executor: SessionExecutor
    private let listener: LocalUnixListener
    private let remoteSocket: String
    private let filter: UsbmuxFilter
    private let control: PumpControl
    private let device: String
    private var links: [ForwardLink] = []

    /// Blocking libssh calls in the loop (channel open, a write waiting for window) get this long.
    private let callTimeout = 30.0

    init(
        session: SessionHandle, executor: SessionExecutor, listener: LocalUnixListener, remoteSocket: String,
        filter: UsbmuxFilter, control: PumpControl, device: String
    ) {
        self.session = session
        self.executor = executor
        self.listener = listener
        self.remoteSocket = remoteSocket
        self.filter = filter
        self.control = control
        self.device = device
    }

    static func openChannel(session: SessionHandle, remoteSocket: String, device: String) throws
        -> ChannelHandle
    {
        guard let raw = ssh_channel_new(session.raw) else {
            throw SSHError.sessionFailed(device: device, step: "opening a channel", reason: session.lastError)
        }
        let channel = ChannelHandle(raw: raw, session: session)
        guard ssh_channel_open_forward_unix(raw, remoteSocket, "127.0.0.1", 0) == SSH_OK else {
            throw SSHError.sessionFailed(
                device: device, step: "opening \(remoteSocket)", reason: session.lastError)
        }
        return channel
    }

    func run() {
        var failure: String?
        while !control.shouldStop {
            if ssh_is_connected(session.raw) == 0 || executor.abortedReason != nil {
                failure = executor.abortedReason ?? "SSH connection lost: \(session.lastError)"
                break
            }
            waitForActivity()
            acceptClients()
            for link in links { service(link) }
            links.removeAll { link in
                if link.finished { link.close() }
                return link.finished
            }
        }
        for link in links { link.close() }
        links.removeAll()
        listener.closeSocket()
        // Also when the forwarder was only released: the socket file and its directory never outlive it.
        listener.remove()
        control.finish(failure: failure)
    }

    private func waitForActivity() {
        var fds = [pollfd(fd: listener.fd, events: Int16(POLLIN), revents: 0)]
        let sshFD = ssh_get_fd(session.raw)
        if sshFD >= 0 { fds.append(pollfd(fd: sshFD, events: Int16(POLLIN), revents: 0)) }
        for link in links {
            var events = link.clientClosed ? 0 : Int16(POLLIN)
            if !link.toClient.isEmpty { events |= Int16(POLLOUT) }
            fds.append(pollfd(fd: link.fd, events: events, revents: 0))
        }
        // libssh may hold decoded data the socket no longer shows as readable: wake up regularly.
        _ = poll(&fds, nfds_t(fds.count), 10)
    }

    private func acceptClients() {
        while let client = listener.accept() {
            do {
                let channel = try executor.guarded("opening \(remoteSocket)", timeout: callTimeout) {
                    try Self.openChannel(session: session, remoteSocket: remoteSocket, device: device)
                }
                links.append(ForwardLink(fd: client, channel: channel))
            } catch {
                // The client sees the connection close, which libusbmuxd reports as "no usbmuxd".
                close(client)
            }
        }
    }

    private func service(_ link: ForwardLink) {
        do {
            readClient(link)
            try processClientBytes(link)
            try readChannel(link)
            try processServerBytes(link)
            flushClient(link)
            if link.clientClosed {
                link.finished = true
            } else if link.serverClosed, link.toClient.isEmpty {
                link.finished = true
            }
        } catch {
            link.finished = true
        }
    }

    private func readClient(_ link: ForwardLink) {
        guard !link.clientClosed else { return }
        var buffer = [UInt8](repeating: 0, count: 32 * 1024)
        while true {
            let n = read(link.fd, &buffer, buffer.count)
            if n > 0 {
                link.fromClient.append(contentsOf: buffer[0..<n])
                if link.fromClient.count > UsbmuxFrame.maximumSize * 2 { break }
            } else if n == 0 {
                link.clientClosed = true
                break
            } else {
                if errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR { link.clientClosed = true }
                break
            }
        }
    }

    private func writeChannel(_ link: ForwardLink, _ data: Data) throws {
        guard !data.isEmpty else { return }
        try executor.guarded("forwarding to \(remoteSocket)", timeout: callTimeout) {
            try link.channel.write(data, step: "forwarding to \(remoteSocket)")
        }
    }

    private func processClientBytes(_ link: ForwardLink) throws {
        if link.raw {
            let data = link.fromClient
            link.fromClient = Data()
            try writeChannel(link, data)
            return
        }
        while !link.awaitingConnect, let frame = try UsbmuxFrame.take(from: &link.fromClient) {
            var decision = filter.decide(request: frame)
            if case .lookup(let id) = decision {
                lookUpDevices()
                decision = filter.knownDevices[id] == true ? .forwardConnect : .refuse(2)
            }
            switch decision {
            case .forward:
                try writeChannel(link, frame.encoded)
            case .forwardConnect:
                link.awaitingConnect = true
                try writeChannel(link, frame.encoded)
            case .refuse(let number):
                link.toClient.append(UsbmuxFrame.result(number, tag: frame.tag).encoded)
            case .lookup:
                break
            }
        }
    }

    private func readChannel(_ link: ForwardLink) throws {
        var buffer = [UInt8](repeating: 0, count: 32 * 1024)
        while true {
            let n = buffer.withUnsafeMutableBytes {
                ssh_channel_read_nonblocking(link.channel.raw, $0.baseAddress, UInt32($0.count), 0)
            }
            if n > 0 {
                link.fromServer.append(contentsOf: buffer[0..<Int(n)])
                if link.fromServer.count > UsbmuxFrame.maximumSize * 2 { break }
            } else if n == 0 || n == SSH_AGAIN || n == SSH_EOF {
                if ssh_channel_is_eof(link.channel.raw) != 0 || ssh_channel_is_closed(link.channel.raw) != 0 {
                    link.serverClosed = true
                }
                break
            } else {
                link.serverClosed = true
                break
            }
        }
    }

    private func processServerBytes(_ link: ForwardLink) throws {
        if !link.raw {
            while let frame = try UsbmuxFrame.take(from: &link.fromServer) {
                if link.awaitingConnect, frame.plist?["MessageType"] as? String == "Result" {
                    link.awaitingConnect = false
                    link.toClient.append(frame.encoded)
                    if UsbmuxFilter.integer(frame.plist?["Number"]) == 0 {
                        // From here on the socket is the device's TCP stream (PROTOCOL.md §1.7).
                        link.raw = true
                        break
                    }
                } else if let passed = filter.filter(reply: frame) {
                    link.toClient.append(passed.encoded)
                }
            }
            if link.raw { try processClientBytes(link) }
        }
        if link.raw {
            link.toClient.append(link.fromServer)
            link.fromServer = Data()
        }
    }

    private func flushClient(_ link: ForwardLink) {
        while !link.toClient.isEmpty {
            // MSG_NOSIGNAL: a client that went away must not raise SIGPIPE.
            let n = link.toClient.withUnsafeBytes {
                send(link.fd, $0.baseAddress, $0.count, SocketCalls.noSignalSendFlags)
            }
            if n > 0 {
                link.toClient.removeFirst(n)
            } else {
                if n < 0, errno != EAGAIN, errno != EWOULDBLOCK, errno != EINTR {
                    link.clientClosed = true
                    link.toClient = Data()
                }
                break
            }
        }
    }

    /// Learns which device IDs exist by asking the remote usbmuxd for its list (bounded by 5 s).
    private func lookUpDevices() {
        guard
            let channel = try? executor.guarded(
                "listing devices", timeout: callTimeout,
                { try Self.openChannel(session: session, remoteSocket: remoteSocket, device: device) })
        else { return }
        let request = UsbmuxFrame.plist(
            ["MessageType": "ListDevices", "ClientVersionString": "hadeploy", "ProgName": "hadeploy"],
            tag: 0x7fff)
        guard
            (try? executor.guarded(
                "listing devices", timeout: callTimeout,
                {
                    try channel.write(request.encoded, step: "listing devices")
                })) != nil
        else { return }
        var received = Data()
        var buffer = [UInt8](repeating: 0, count: 32 * 1024)
        // Not the context's clock: a synchronous read loop (100 ms per libssh read) on the executor.
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline {
            guard let n = try? channel.read(into: &buffer, timeoutMs: 100) else { return }
            received.append(contentsOf: buffer[0..<n])
            if let frame = try? UsbmuxFrame.take(from: &received) {
                filter.learn(deviceListReply: frame)
                return
            }
            if n == 0, channel.isEOF { return }
        }
    }
}
