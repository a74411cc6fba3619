import CLibSSH
import Foundation
import HADeployCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Owns one `ssh_session`; every method blocks and must run on the session's `SessionExecutor` queue.
final class SessionHandle: @unchecked Sendable {
    let raw: ssh_session
    let config: SSHConnectionConfig
    private var legacyUserSignatures = false

    // Full lists because libssh 0.10.6 rejects the `+algo` syntax (PLATFORM-NOTES §2.6). Names the
    // build lacks are dropped by libssh itself; an empty result fails.
    static let legacyKeyExchange =
        "curve25519-sha256,curve25519-sha256@libssh.org,ecdh-sha2-nistp256,ecdh-sha2-nistp384,"
        + "ecdh-sha2-nistp521,diffie-hellman-group18-sha512,diffie-hellman-group16-sha512,"
        + "diffie-hellman-group-exchange-sha256,diffie-hellman-group14-sha256,diffie-hellman-group14-sha1,"
        + "diffie-hellman-group1-sha1,diffie-hellman-group-exchange-sha1"
    static let legacyHostKeys =
        "ssh-ed25519,ecdsa-sha2-nistp521,ecdsa-sha2-nistp384,ecdsa-sha2-nistp256,rsa-sha2-512,rsa-sha2-256,ssh-rsa"
    static let legacyCiphers =
        "chacha20-poly1305@openssh.com,aes256-gcm@openssh.com,aes128-gcm@openssh.com,aes256-ctr,aes192-ctr,"
        + "aes128-ctr,aes256-cbc,aes192-cbc,aes128-cbc,3des-cbc"
    static let legacyMACs =
        "hmac-sha2-256-etm@openssh.com,hmac-sha2-512-etm@openssh.com,hmac-sha2-256,hmac-sha2-512,"
        + "hmac-sha1-etm@openssh.com,hmac-sha1"

    private init(raw: ssh_session, config: SSHConnectionConfig) {
        self.raw = raw
        self.config = config
    }

    deinit {
        ssh_free(raw)
    }

    var lastError: String {
        let text = String(cString: ssh_get_error(UnsafeMutableRawPointer(raw)))
        return text.isEmpty ? "unknown libssh error" : text
    }

    var isOpenSSH: Bool { ssh_get_openssh_version(raw) > 0 }

    /// The server took the TCP connection and never said a word (no `SSH-2.0-…` banner): what OpenSSH
    /// does on an iPad 4 jailbroken with h3lix (iOS 10.3.3), which needs Dropbear.
    static let silentServerHint =
        "The SSH server accepted the connection but never sent its banner. On an iPad 4 (iOS 10.3.3, "
        + "h3lix) OpenSSH does this: install Dropbear from Cydia and point the device's port at it."

    static func isTimeout(_ reason: String) -> Bool {
        let lowered = reason.lowercased()
        return lowered.contains("timeout") || lowered.contains("timed out") || lowered.contains("deadline")
    }

    var serverBanner: String {
        guard let banner = ssh_get_serverbanner(raw) else { return "" }
        return String(cString: banner)
    }

    // MARK: connect

    /// Creates the session, connects and runs the key exchange. The socket is handed to `executor`
    /// before the handshake so a stuck server can be cut off.
    static func connect(config: SSHConnectionConfig, executor: SessionExecutor) throws -> SessionHandle {
        guard let raw = ssh_new() else {
            throw SSHError.sessionFailed(device: config.name, step: "setup", reason: "ssh_new failed")
        }
        let handle = SessionHandle(raw: raw, config: config)
        try handle.setOptions()
        let fd: Int32
        do {
            fd = try TCPConnector.connect(
                host: config.host, port: config.port, timeout: config.timeouts.connect)
        } catch {
            throw SSHError.connectFailed(
                device: config.name, address: config.address, reason: error.reason,
                hint:
                    "Check that it is on the network and its SSH server runs on port \(config.port).")
        }
        executor.watch(socket: fd)
        var socketValue = fd
        guard ssh_options_set(raw, SSH_OPTIONS_FD, &socketValue) == SSH_OK else {
            close(fd)
            throw SSHError.sessionFailed(device: config.name, step: "setup", reason: handle.lastError)
        }
        if ssh_connect(raw) != SSH_OK {
            let reason = executor.abortedReason ?? handle.lastError
            var hint =
                reason.contains("no match for method") && !config.legacyAlgorithms
                ? "The server only offers old algorithms: set legacy_algorithms: true for this device."
                : ""
            if handle.serverBanner.isEmpty, Self.isTimeout(reason) {
                hint = Self.silentServerHint
            }
            throw SSHError.connectFailed(
                device: config.name, address: config.address, reason: reason, hint: hint)
        }
        return handle
    }

    private func setOptions() throws {
        try set(SSH_OPTIONS_HOST, config.host)
        var port = UInt32(config.port)
        try set(SSH_OPTIONS_PORT, &port)
        try set(SSH_OPTIONS_USER, config.user)
        try set(SSH_OPTIONS_KNOWNHOSTS, config.resolvedKnownHostsPath)
        // Only the file we were given decides trust: not /etc/ssh/ssh_known_hosts ...
        try set(SSH_OPTIONS_GLOBAL_KNOWNHOSTS, "/dev/null")
        // ... and ~/.ssh/config or /etc/ssh/ssh_config must not change hosts, keys or algorithms.
        var no: Int32 = 0
        try set(SSH_OPTIONS_PROCESS_CONFIG, &no)
        var verbosity = Int32(SSH_LOG_NOLOG)
        try set(SSH_OPTIONS_LOG_VERBOSITY, &verbosity)
        var timeout = max(1, Int(clampingDouble: config.timeouts.connect.rounded(.up)))
        try set(SSH_OPTIONS_TIMEOUT, &timeout)
        if case .agent(let socket?) = config.authentication {
            try set(SSH_OPTIONS_IDENTITY_AGENT, socket)
        }
        if config.legacyAlgorithms {
            try set(SSH_OPTIONS_KEY_EXCHANGE, Self.legacyKeyExchange)
            try set(SSH_OPTIONS_HOSTKEYS, Self.legacyHostKeys)
            try set(SSH_OPTIONS_CIPHERS_C_S, Self.legacyCiphers)
            try set(SSH_OPTIONS_CIPHERS_S_C, Self.legacyCiphers)
            try set(SSH_OPTIONS_HMAC_C_S, Self.legacyMACs)
            try set(SSH_OPTIONS_HMAC_S_C, Self.legacyMACs)
        }
    }

    private func set(_ option: ssh_options_e, _ value: String) throws {
        guard ssh_options_set(raw, option, value) == SSH_OK else {
            throw SSHError.sessionFailed(
                device: config.name, step: "setting option \(option.rawValue)", reason: lastError)
        }
    }

    private func set(_ option: ssh_options_e, _ value: UnsafeRawPointer) throws {
        guard ssh_options_set(raw, option, value) == SSH_OK else {
            throw SSHError.sessionFailed(
                device: config.name, step: "setting option \(option.rawValue)", reason: lastError)
        }
    }

    // MARK: host key

    func hostKey() throws -> HostKeyInfo {
        var key: ssh_key?
        guard ssh_get_server_publickey(raw, &key) == SSH_OK, let key else {
            throw SSHError.sessionFailed(device: config.name, step: "reading the host key", reason: lastError)
        }
        defer { ssh_key_free(key) }
        var hash: UnsafeMutablePointer<UInt8>?
        var length = 0
        guard ssh_get_publickey_hash(key, SSH_PUBLICKEY_HASH_SHA256, &hash, &length) == 0, let hash else {
            throw SSHError.sessionFailed(device: config.name, step: "hashing the host key", reason: lastError)
        }
        defer {
            var pointer: UnsafeMutablePointer<UInt8>? = hash
            ssh_clean_pubkey_hash(&pointer)
        }
        var fingerprint = "SHA256:?"
        if let text = ssh_get_fingerprint_hash(SSH_PUBLICKEY_HASH_SHA256, hash, length) {
            fingerprint = String(cString: text)
            ssh_string_free_char(text)
        }
        let keyType = ssh_key_type_to_char(ssh_key_type(key)).map { String(cString: $0) } ?? "unknown"
        let status: HostKeyInfo.Status
        switch ssh_session_is_known_server(raw) {
        case SSH_KNOWN_HOSTS_OK: status = .trusted
        case SSH_KNOWN_HOSTS_CHANGED: status = .changed
        case SSH_KNOWN_HOSTS_OTHER: status = .otherType
        case SSH_KNOWN_HOSTS_UNKNOWN, SSH_KNOWN_HOSTS_NOT_FOUND: status = .unknown
        default:
            throw SSHError.knownHostsFailed(path: config.resolvedKnownHostsPath, reason: lastError)
        }
        var line = ""
        var entry: UnsafeMutablePointer<CChar>?
        if ssh_session_export_known_hosts_entry(raw, &entry) == SSH_OK, let entry {
            line = String(cString: entry).trimmingCharacters(in: .whitespacesAndNewlines)
            ssh_string_free_char(entry)
        }
        return HostKeyInfo(keyType: keyType, fingerprint: fingerprint, status: status, knownHostsLine: line)
    }

    /// Refuses anything but a trusted key; never accepts a key on its own.
    func verifyHostKey() throws -> HostKeyInfo {
        let info = try hostKey()
        switch info.status {
        case .trusted:
            return info
        case .unknown:
            throw SSHError.unknownHostKey(
                device: config.name, address: config.address, keyType: info.keyType,
                fingerprint: info.fingerprint, knownHosts: config.resolvedKnownHostsPath)
        case .changed, .otherType:
            throw SSHError.hostKeyChanged(
                device: config.name, address: config.address, keyType: info.keyType,
                fingerprint: info.fingerprint, knownHosts: config.resolvedKnownHostsPath)
        }
    }

    /// Appends the current host key to the known_hosts file (creating it and its directory).
    func writeKnownHostsEntry() throws {
        let directory = (config.resolvedKnownHostsPath as NSString).deletingLastPathComponent
        // The file libssh appends to: the machine's.
        let files = config.fileSystem
        try? files.createDirectory(
            at: URL(fileURLWithPath: directory), withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        // libssh creates the file through fopen (0644 under the usual umask): a map of the hosts this
        // user deploys to is nobody else's business.
        let existed = files.fileExists(atPath: config.resolvedKnownHostsPath)
        if !existed {
            _ = try? files.writePrivately(Data(), to: URL(fileURLWithPath: config.resolvedKnownHostsPath))
        }
        defer { files.restrictToOwner(atPath: config.resolvedKnownHostsPath) }
        guard ssh_session_update_known_hosts(raw) == SSH_OK else {
            throw SSHError.knownHostsFailed(path: config.resolvedKnownHostsPath, reason: lastError)
        }
    }

    // MARK: authentication

    func authenticate() throws {
        let method = config.authentication.description
        var result: Int32
        switch config.authentication {
        case .password(let secret):
            result = ssh_userauth_password(raw, nil, secret.reveal())
        case .privateKey(let configuredPath, let passphrase):
            // devices.yaml writes `~/.ssh/id_ed25519`; libssh does not expand it for key files.
            let path = config.expandTilde(configuredPath)
            var key: ssh_key?
            let rc = ssh_pki_import_privkey_file(path, passphrase?.reveal(), nil, nil, &key)
            guard rc == SSH_OK, let key else {
                let reason =
                    !config.fileSystem.isReadableFile(atPath: path)
                    ? "the file does not exist or is not readable"
                    : (passphrase == nil
                        ? "not a supported private key, or it is encrypted and no passphrase was given"
                        : "wrong passphrase or unsupported key format")
                throw SSHError.keyUnreadable(path: path, reason: reason)
            }
            defer { ssh_key_free(key) }
            result = ssh_userauth_publickey(raw, nil, key)
            if result == SSH_AUTH_DENIED.rawValue, shouldRetryWithSHA1(keyType: ssh_key_type(key)) {
                result = ssh_userauth_publickey(raw, nil, key)
            }
        case .agent:
            result = ssh_userauth_agent(raw, nil)
            if result == SSH_AUTH_DENIED.rawValue, shouldRetryWithSHA1(keyType: SSH_KEYTYPE_RSA) {
                result = ssh_userauth_agent(raw, nil)
            }
        }
        switch result {
        case SSH_AUTH_SUCCESS.rawValue:
            return
        case SSH_AUTH_DENIED.rawValue:
            throw SSHError.authenticationFailed(
                device: config.name, user: config.user, method: method,
                reason: "the server refused the credentials")
        case SSH_AUTH_PARTIAL.rawValue:
            throw SSHError.authenticationFailed(
                device: config.name, user: config.user, method: method,
                reason: "the server wants a second factor, which hadeploy does not support")
        default:
            throw SSHError.authenticationFailed(
                device: config.name, user: config.user, method: method, reason: lastError)
        }
    }

    /// OpenSSH ≥ 7.2 advertises rsa-sha2-* in server-sig-algs even when it only accepts ssh-rsa, so libssh
    /// signs with SHA-2 and is denied (PLATFORM-NOTES §2.5). One retry with SHA-1 signatures, only for
    /// RSA keys on legacy connections; the same session accepts the second attempt.
    private func shouldRetryWithSHA1(keyType: ssh_keytypes_e) -> Bool {
        guard config.legacyAlgorithms, !legacyUserSignatures, keyType == SSH_KEYTYPE_RSA else { return false }
        legacyUserSignatures = true
        return ssh_options_set(raw, SSH_OPTIONS_PUBLICKEY_ACCEPTED_TYPES, "ssh-rsa") == SSH_OK
    }

    // MARK: channels

    func openChannel(step: String) throws -> ChannelHandle {
        guard let channel = ssh_channel_new(raw) else {
            throw SSHError.sessionFailed(device: config.name, step: step, reason: lastError)
        }
        let handle = ChannelHandle(raw: channel, session: self)
        let rc = ssh_channel_open_session(channel)
        guard rc == SSH_OK else {
            throw failure("\(step) (opening a session channel: \(rc))")
        }
        return handle
    }

    /// The error for a failed call: a lost connection reads differently from a refused request.
    func failure(_ step: String) -> SSHError {
        let reason = lastError
        if ssh_is_connected(raw) == 0 || reason.lowercased().contains("socket") {
            return .disconnected(device: config.name, step: step, reason: reason)
        }
        return .sessionFailed(device: config.name, step: step, reason: reason)
    }

    /// How much output a command may write in all before it is stopped: what is kept of both streams
    /// plus 256 MiB (a chatty command's excess is read and dropped; a runaway one is not read for ever).
    static func outputCeiling(_ limit: Int) -> Int { 2 * limit + (256 << 20) }

    /// Runs `command`, feeding `stdin`, collecting stdout/stderr up to `limit` bytes each. With
    /// `holdStdinOpen` the command's stdin stays open (no EOF) until the channel closes, so the remote
    /// side can notice this end going away.
    func execute(_ command: String, stdin: Data?, limit: Int, step: String, holdStdinOpen: Bool = false)
        throws
        -> SSHCommandOutput
    {
        let channel = try openChannel(step: step)
        let rc = ssh_channel_request_exec(channel.raw, command)
        guard rc == SSH_OK else {
            throw failure("\(step) (starting the command: \(rc))")
        }
        if let stdin, !stdin.isEmpty {
            try channel.write(stdin, step: step)
        }
        if !holdStdinOpen { _ = ssh_channel_send_eof(channel.raw) }
        var stdout = Data()
        var stderr = Data()
        var received = 0
        var buffer = [UInt8](repeating: 0, count: 32 * 1024)
        // SSH_AGAIN: the wait ended without data; SSH_EOF: that stream ended (read_nonblocking).
        let benign = [Int32(0), SSH_AGAIN, SSH_EOF]
        while true {
            // Alternate between the streams: waiting on stdout alone could stall a command that fills the
            // shared channel window with stderr.
            let out = buffer.withUnsafeMutableBytes {
                ssh_channel_read_timeout(channel.raw, $0.baseAddress, UInt32($0.count), 0, 50)
            }
            if out > 0 {
                received += Int(out)
                if stdout.count < limit {
                    stdout.append(contentsOf: buffer[0..<min(Int(out), limit - stdout.count)])
                }
            }
            // Everything stderr has so far, not one piece per round: libssh opens the channel's window
            // whatever stream is read, so stderr left behind piles up in its buffer without bound (a
            // device writing gigabytes to stderr crashed hadeploy inside libssh).
            var err: Int32 = 0
            repeat {
                err = buffer.withUnsafeMutableBytes {
                    ssh_channel_read_nonblocking(channel.raw, $0.baseAddress, UInt32($0.count), 1)
                }
                if err > 0 {
                    received += Int(err)
                    if stderr.count < limit {
                        stderr.append(contentsOf: buffer[0..<min(Int(err), limit - stderr.count)])
                    }
                }
            } while err > 0 && received <= Self.outputCeiling(limit)
            if (out < 0 && !benign.contains(out)) || (err < 0 && !benign.contains(err)) {
                throw failure("\(step) (reading its output: \(out), \(err))")
            }
            // Output far past what is kept is a runaway command: stop it rather than read on for ever.
            if received > Self.outputCeiling(limit) {
                _ = ssh_channel_close(channel.raw)
                throw SSHError.sessionFailed(
                    device: config.name, step: step,
                    reason: "the command wrote more than \(Self.outputCeiling(limit) >> 20) MiB of output; "
                        + "stopped (hadeploy keeps at most \(limit >> 20) MiB of each stream)")
            }
            if out <= 0, err <= 0, ssh_channel_is_eof(channel.raw) != 0 {
                break
            }
        }
        let status = hadeploy_ssh_channel_get_exit_status(channel.raw)
        return SSHCommandOutput(exitStatus: status < 0 ? nil : status, stdout: stdout, stderr: stderr)
    }
}

extension SessionHandle {
    func disconnect() {
        ssh_disconnect(raw)
    }
}
