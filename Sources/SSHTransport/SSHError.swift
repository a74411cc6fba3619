import Foundation

/// Everything that can go wrong while talking to a device or host over SSH.
///
/// Each `description` says what failed, on which device, and what the user can do next.
/// No case ever carries a password, token or key.
public enum SSHError: Error, Sendable, CustomStringConvertible, Equatable {
    /// TCP connect or SSH handshake failed (refused, unreachable, no common algorithm, ...).
    case connectFailed(device: String, address: String, reason: String, hint: String)
    /// A step did not finish before its deadline; the connection was shut down.
    case timedOut(device: String, step: String, seconds: Double)
    /// The server's host key is not in the known_hosts file.
    case unknownHostKey(
        device: String, address: String, keyType: String, fingerprint: String, knownHosts: String)
    /// The server's host key differs from the trusted one (or is of another type).
    case hostKeyChanged(
        device: String, address: String, keyType: String, fingerprint: String, knownHosts: String)
    /// The known_hosts file could not be read or written.
    case knownHostsFailed(path: String, reason: String)
    /// The server refused the credentials.
    case authenticationFailed(device: String, user: String, method: String, reason: String)
    /// A private key file could not be loaded.
    case keyUnreadable(path: String, reason: String)
    /// A remote command ran and failed; `stderr` is what it printed (capped).
    case remoteCommandFailed(
        device: String, step: String, command: String, exitStatus: Int32?, stderr: String)
    /// A libssh call failed on an open connection.
    case sessionFailed(device: String, step: String, reason: String)
    /// The connection was closed or lost.
    case disconnected(device: String, step: String, reason: String)
    /// An upload stopped half way; the installed app was left as it was.
    case transferInterrupted(
        device: String, app: String, installed: String, temporary: String,
        temporaryRemoved: Bool, reason: String)
    /// The on-device backup taken before a deploy could not be written; nothing was changed.
    case backupFailed(device: String, reason: String)
    /// A rollback found no usable backup, or the backup did not match its checksum.
    case rollbackUnavailable(device: String, reason: String)
    /// A local file or directory could not be used.
    case localFileFailed(path: String, reason: String)
    /// The server cannot forward UNIX sockets (direct-streamlocal), needed for `usb_host`.
    case forwardingUnsupported(device: String, reason: String)
    /// The caller asked for something invalid (a template with a secret placeholder, an empty name...).
    case invalidConfiguration(String)

    public var description: String {
        switch self {
        case .connectFailed(let device, let address, let reason, let hint):
            return "SSH connection to \(device) (\(address)) failed: \(reason)."
                + (hint.isEmpty ? "" : " \(hint)")
        case .timedOut(let device, let step, let seconds):
            return
                "SSH \(step) on \(device) did not finish within \(Self.format(seconds)) s; the connection was "
                + "closed. Check that the device is awake and reachable, or raise the timeout."
        case .unknownHostKey(let device, let address, let keyType, let fingerprint, let knownHosts):
            return
                "The SSH host key of \(device) (\(address)) is not trusted yet: \(keyType) \(fingerprint). "
                + "Compare this fingerprint with the one on the device (ssh-keygen -lf on its host key), then "
                + "run `hadeploy trust-host \(device)` to add it to \(knownHosts)."
        case .hostKeyChanged(let device, let address, let keyType, let fingerprint, let knownHosts):
            return
                "WARNING: THE SSH HOST KEY OF \(device) (\(address)) HAS CHANGED. It now presents \(keyType) "
                + "\(fingerprint), which does not match the key trusted in \(knownHosts). Someone may be "
                + "intercepting the connection, so nothing was sent. If the device's SSH server was reinstalled, "
                + "check the new fingerprint on the device and run `hadeploy trust-host \(device) --replace`."
        case .knownHostsFailed(let path, let reason):
            return "Could not use the known_hosts file \(path): \(reason)."
        case .authenticationFailed(let device, let user, let method, let reason):
            return
                "SSH login as \(user) on \(device) failed (\(method)): \(reason). Check the user, the key or "
                + "the password variable in .env; for an old jailbreak OpenSSH set legacy_algorithms: true."
        case .keyUnreadable(let path, let reason):
            return "Could not load the SSH private key \(path): \(reason)."
        case .remoteCommandFailed(let device, let step, let command, let exitStatus, let stderr):
            let status = exitStatus.map { "exit status \($0)" } ?? "no exit status"
            let output = stderr.isEmpty ? "(no error output)" : stderr
            return "\(step) on \(device) failed (\(status)) running `\(command)`: \(output)"
        case .sessionFailed(let device, let step, let reason):
            return "SSH \(step) on \(device) failed: \(reason)."
        case .disconnected(let device, let step, let reason):
            return "The SSH connection to \(device) was lost during \(step): \(reason)."
        case .transferInterrupted(let device, let app, let installed, let temporary, let removed, let reason):
            let cleanup =
                removed
                ? "the temporary copy \(temporary) was removed"
                : "the temporary copy \(temporary) could not be removed now and will be removed by the next deploy"
            return
                "Upload of \(app) to \(device) was interrupted (\(reason)). The installed app \(installed) "
                + "was left as it was; \(cleanup). Run the deploy again once the device is reachable."
        case .backupFailed(let device, let reason):
            return
                "The backup of the installed app and its preferences on \(device) could not be written (\(reason)), "
                + "so nothing on the device was changed. Free space under /var/mobile/Library/HADashboard-backups "
                + "or fix its permissions, then deploy again."
        case .rollbackUnavailable(let device, let reason):
            return
                "Cannot roll back \(device): \(reason). `hadeploy rollback \(device) --list` shows the backups."
        case .localFileFailed(let path, let reason):
            return "Could not read \(path): \(reason)."
        case .forwardingUnsupported(let device, let reason):
            return "Cannot forward usbmuxd from \(device): \(reason). usb_host needs an OpenSSH server with "
                + "AllowStreamLocalForwarding yes and read/write access to its usbmuxd socket for the login user."
        case .invalidConfiguration(let message):
            return "Invalid SSH configuration: \(message)."
        }
    }

    /// A fault worth a retry after probing the device again: the connection was refused, reset or timed
    /// out while connecting (an iPad 2 on Wi-Fi that is waking up), or closed by the server before it
    /// said a word (libssh's "Socket error: disconnected": an sshd over its MaxStartups, a Wi-Fi hiccup),
    /// as the old script retried each target.
    public var isTransientConnectFault: Bool {
        switch self {
        case .connectFailed(_, _, let reason, _):
            let text = reason.lowercased()
            return [
                "refused", "reset", "timed out", "timeout", "unreachable", "no route", "closed by",
                "disconnected",
            ]
            .contains {
                text.contains($0)
            }
        case .timedOut(_, let step, _):
            return step.contains("connect") || step.contains("handshake") || step.contains("authentication")
        default:
            return false
        }
    }

    private static func format(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(format: "%.1f", seconds)
    }
}
