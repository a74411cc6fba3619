import Foundation
import NIOCore
import NIOPosix

/// A network twin's own address on the loopback: what a Wi-Fi-synced device is to
/// libimobiledevice 1.3.0. For a `Network` entry `idevice_connect` does not ask usbmuxd to connect:
/// it opens TCP straight to the entry's `NetworkAddress` on lockdownd's port 62078, then on each port
/// StartService hands out (src/idevice.c at 1.3.0). Both are served here by the same handlers as a
/// usbmuxd tunnel, so TLS after StartSession works exactly as over USB.
actor NetworkEndpoint {
    static let lockdownPort = 62_078
    /// A service port nobody connects to is closed after this long, as a device's would be.
    static let serviceIdle: TimeAmount = .seconds(60)

    /// The address this twin listens on (`127.x.y.z`); fixed at the first `start`.
    private(set) var host: String?
    private let configuredHost: String?
    private var lockdown: Channel?
    private var services: [UInt16: Channel] = [:]
    /// Service ports whose one connection came: their listener closes when it ends, not when idle.
    private var inUse: Set<UInt16> = []
    private var streams: [ObjectIdentifier: ByteStream] = [:]
    /// Connections accepted at this address so far (lockdownd and services).
    private(set) var acceptedConnections = 0

    init(configuredHost: String?) {
        self.configuredHost = configuredHost
    }

    /// Listens for lockdownd on the configured address, or on a free one in 127.77.0.0/16 (another
    /// twin, in this process or another, may own 62078 on an address already).
    func start(runtime: DeviceRuntime) async throws -> String {
        if let lockdown, lockdown.isActive, let host { return host }
        var candidates: [String]
        if let host = host ?? configuredHost {
            candidates = [host]
        } else {
            #if os(Linux)
                candidates = (0..<32).map { _ in
                    "127.77.\(Int.random(in: 0...255)).\(Int.random(in: 1...254))"
                }
            #else
                // macOS configures only 127.0.0.1 on lo0: one network twin there, more with aliases
                // (`sudo ifconfig lo0 alias 127.77.0.2` and `networkAddress` in the profile).
                candidates = ["127.0.0.1"]
            #endif
        }
        var lastError: (any Error)?
        for candidate in candidates {
            do {
                lockdown = try await bind(candidate, port: Self.lockdownPort) { stream in
                    await ServiceHost.serve(nil, on: stream, runtime: runtime)
                }
                host = candidate
                return candidate
            } catch {
                lastError = error
            }
        }
        throw VirtualDeviceError.bindFailed(
            "\(candidates.first ?? "127.77.0.0/16"):\(Self.lockdownPort)",
            "\(lastError.map { "\($0)" } ?? "no address")")
    }

    /// Opens a StartService port on this address too: the port the runtime registered, or the next
    /// free one. Returns the port to hand out; the runtime serves it once, whichever way the client
    /// comes (TCP here or a usbmuxd Connect when the twin is also on USB).
    func openService(_ kind: ServiceKind, runtime: DeviceRuntime) async -> UInt16 {
        for _ in 0..<16 {
            let port = await runtime.openService(kind)
            // Off the network (stopped): no new listener at the address.
            guard let host, lockdown != nil else { return port }
            do {
                let channel = try await bind(host, port: Int(port)) { stream in
                    await self.markInUse(port)
                    guard let kind = await runtime.takeService(port: port) else {
                        runtime.logger.debug("network connection to port \(port): no service waits there")
                        stream.close()
                        return
                    }
                    runtime.logger.trace("network connection to \(kind) on port \(port)")
                    await ServiceHost.serve(kind, on: stream, runtime: runtime)
                    // Not at accept: closing the listener then cut the connection it had just accepted
                    // before its first bytes were read (seen with ideviceinstaller's AFC upload).
                    await self.closeService(port)
                }
                services[port] = channel
                channel.eventLoop.scheduleTask(in: Self.serviceIdle) { [weak self] in
                    Task { await self?.closeIdleService(port) }
                }
                return port
            } catch {
                _ = await runtime.takeService(port: port)
            }
        }
        return await runtime.openService(kind)
    }

    private func markInUse(_ port: UInt16) {
        inUse.insert(port)
    }

    private func closeIdleService(_ port: UInt16) {
        guard !inUse.contains(port) else { return }
        closeService(port)
    }

    private func closeService(_ port: UInt16) {
        inUse.remove(port)
        services.removeValue(forKey: port)?.close(promise: nil)
    }

    /// Off the network: nothing listens any more (clients get "connection refused").
    func stop() async {
        try? await lockdown?.close()
        lockdown = nil
        for channel in services.values { try? await channel.close() }
        services.removeAll()
        inUse.removeAll()
        for stream in streams.values { stream.close() }
        streams.removeAll()
    }

    private func track(_ stream: ByteStream) {
        acceptedConnections += 1
        streams[ObjectIdentifier(stream)] = stream
    }

    private func untrack(_ stream: ByteStream) {
        streams.removeValue(forKey: ObjectIdentifier(stream))
    }

    private func bind(
        _ host: String, port: Int, serve: @escaping @Sendable (ByteStream) async -> Void
    ) async throws -> Channel {
        try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 16)
            // Rebinding after a reboot must not wait out TIME_WAIT; a live listener still refuses.
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let stream = try ByteStream(channel: channel, overNetwork: true)
                    Task {
                        // The "network" is this host's loopback: only the user running the twins
                        // reaches it (another user's process could take a service port first).
                        if let client = channel.remoteAddress?.port, let server = channel.localAddress?.port,
                            !LoopbackPeer.isSameUser(clientPort: client, serverPort: server)
                        {
                            stream.close()
                            return
                        }
                        await self.track(stream)
                        await serve(stream)
                        await self.untrack(stream)
                    }
                }
            }
            .bind(host: host, port: port).get()
    }

    /// usbmuxd's `NetworkAddress`: a BSD `struct sockaddr_in` (length, family AF_INET = 2, port,
    /// address, zero padding). libimobiledevice reads the family from byte 1 and copies the 14 bytes
    /// after it; the port is replaced by the one it connects to.
    static func socketAddress(_ host: String) -> Data {
        var bytes: [UInt8] = [16, 2, UInt8(lockdownPort >> 8), UInt8(lockdownPort & 0xFF)]
        bytes += host.split(separator: ".").map { UInt8($0) ?? 0 }
        bytes += [UInt8](repeating: 0, count: 16 - bytes.count)
        return Data(bytes)
    }
}
