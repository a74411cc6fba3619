import CLibSSH

/// The libssh the binary runs against.
public enum LibSSH {
    /// The runtime version string of libssh, e.g. "0.10.6/openssl/zlib".
    public static var version: String {
        String(cString: ssh_version(0))
    }
}
