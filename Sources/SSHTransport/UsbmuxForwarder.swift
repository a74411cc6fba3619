import CLibSSH
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Makes the usbmuxd of another machine (`usb_host: ssh://user@nas`) usable here, showing only the
/// allowed devices.
///
/// Listens on a private local UNIX socket; each client connection becomes one direct-streamlocal
/// channel to the remote usbmuxd socket (OpenSSH only: libssh refuses otherwise). The forwarder reads the
/// usbmuxd framing until a Connect succeeds, dropping devices whose UDID is not allowed from device
/// lists and events and refusing Connect and pair-record requests for them. Point libimobiledevice at
/// `socketAddress` through `USBMUXD_SOCKET_ADDRESS`.
public final class UsbmuxForwarder: Sendable {
    /// The local socket path.
    public let socketPath: String
    /// The value for `USBMUXD_SOCKET_ADDRESS`, e.g. `UNIX:/tmp/hadeploy-usbmux.ab12cd/usbmuxd`.
    public var socketAddress: String { "UNIX:" + socketPath }
    private let connection: SSHConnection
    private let control: PumpControl
    private let listener: LocalUnixListener

    private init(connection: SSHConnection, listener: LocalUnixListener, control: PumpControl) {
        self.connection = connection
        self.listener = listener
        self.control = control
        self.socketPath = listener.path
    }

    deinit {
        control.requestStop()
    }

    /// Connects to `ssh`, checks that `remoteSocket` can be reached, and starts forwarding.
    public static func start(
        ssh config: SSHConnectionConfig, remoteSocket: String = "/var/run/usbmuxd", allowedUDIDs: [String]
    ) async throws -> UsbmuxForwarder {
        let connection = try await SSHConnection.connect(config)
        guard connection.isOpenSSH else {
            await connection.close()
            throw SSHError.forwardingUnsupported(
                device: config.name,
                reason: "the server is '\(connection.serverBanner)', not OpenSSH; libssh only opens "
                    + "direct-streamlocal channels to OpenSSH")
        }
        let name = config.name
        do {
            try await connection.withSession("opening \(remoteSocket)", timeout: config.timeouts.connect) {
                session in
                _ = try ForwardPump.openChannel(session: session, remoteSocket: remoteSocket, device: name)
            }
        } catch let error as SSHError {
            await connection.close()
            if case .sessionFailed(_, _, let reason) = error {
                throw SSHError.forwardingUnsupported(device: name, reason: "\(remoteSocket): \(reason)")
            }
            throw error
        }
        let listener: LocalUnixListener
        do {
            listener = try LocalUnixListener()
        } catch {
            await connection.close()
            throw error
        }
        let control = PumpControl()
        let pump = ForwardPump(
            session: connection.session, executor: connection.executor, listener: listener,
            remoteSocket: remoteSocket, filter: UsbmuxFilter(allowedUDIDs: allowedUDIDs), control: control,
            device: name)
        connection.executor.runDetached { pump.run() }
        return UsbmuxForwarder(connection: connection, listener: listener, control: control)
    }

    /// Why forwarding stopped on its own (the SSH connection was lost), or nil while it runs.
    public var failure: String? { control.failure }

    /// Stops forwarding, closes every tunnel and removes the local socket and its directory.
    public func stop() async {
        control.requestStop()
        await control.waitUntilFinished(timeout: 5)
        await connection.close()
        listener.remove()
    }
}
