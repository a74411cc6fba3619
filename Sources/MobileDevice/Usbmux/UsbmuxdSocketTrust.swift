import Foundation
import HADeployCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Whether a UNIX usbmuxd address may be used: whoever serves a usbmuxd socket receives every pair
/// record, app and secret hadeploy sends to "the device", so a socket another local user made (a
/// fixed name in shared `/tmp` taken first, a folder others can write) is refused before the first
/// byte. Accepted: a socket owned by this user or root, in a folder owned by them that no one else can
/// change (a sticky `/tmp` is not enough: another user can take a name there that is not yet bound),
/// below folders no one else can rename (sticky ones are fine there). After connecting, the process
/// that bound the socket must be this user's or root's too (`peerProblem`).
///
/// A TCP address (`host:port`) is the user's explicit choice of a remote usbmuxd and is not checked
/// here.
public enum UsbmuxdSocketTrust {
    /// The path of a UNIX usbmuxd address (`UNIX:/path` or `/path`), nil for `host:port`.
    public static func unixPath(_ address: String) -> String? {
        let path = address.hasPrefix("UNIX:") ? String(address.dropFirst(5)) : address
        return path.hasPrefix("/") ? path : nil
    }

    /// Why the usbmuxd at `address` may not be trusted, or nil: the socket and its folders
    /// (`pathProblem`, every time), then who serves it (a connection is opened and closed at once;
    /// nothing is sent) — once per socket file: a device list is polled several times a second while
    /// a device is awaited, and the file, in a folder no one else can change, can only be replaced by
    /// this user or root (a new file is a new inode, asked again). A path where nothing is yet, in a
    /// folder only this user or root can change, is fine (nothing listens: connecting says so).
    public static func problem(_ address: String, userID: uid_t = geteuid()) -> String? {
        guard let path = unixPath(address) else { return nil }
        if let problem = pathProblem(path, userID: userID) { return problem }
        var status = stat()
        guard lstat(path, &status) == 0 else { return nil }
        let key = "\(userID)\u{0}\(path)\u{0}\(status.st_dev)\u{0}\(status.st_ino)"
        if servedByTrusted.withLock({ $0.contains(key) }) { return nil }
        let fd = socket(AF_UNIX, SocketCalls.streamSocket, 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        guard OwnerOnlySocket.connect(fd, to: path) == 0 else { return nil }
        if let problem = peerProblem(fd, path: path, userID: userID) { return problem }
        servedByTrusted.withLock { _ = $0.insert(key) }
        return nil
    }

    /// The socket files whose server was seen to be this user's, root's or the system usbmuxd's.
    private static let servedByTrusted = Mutex<Set<String>>([])

    /// Why the socket at `path` (and the folders it is in) may not be trusted, or nil.
    static func pathProblem(_ path: String, userID: uid_t = geteuid()) -> String? {
        let folder = (path as NSString).deletingLastPathComponent
        guard let parent = RealPath.of(folder.isEmpty ? "/" : folder) else {
            return nil  // No folder: nothing can listen there, and connecting says so.
        }
        if let problem = folderProblem(parent, userID: userID, strict: true) { return problem }
        var ancestor = parent
        while ancestor != "/" && !ancestor.isEmpty {
            ancestor = (ancestor as NSString).deletingLastPathComponent
            if let problem = folderProblem(ancestor, userID: userID, strict: false) { return problem }
        }
        var status = stat()
        guard lstat(path, &status) == 0 else {
            return errno == ENOENT ? nil : "\(path) cannot be checked (\(String(cString: strerror(errno))))"
        }
        guard status.st_mode & S_IFMT == S_IFSOCK else {
            return "\(path) is not a socket"
                + (status.st_mode & S_IFMT == S_IFLNK ? " (a symbolic link)" : "")
        }
        guard status.st_uid == userID || status.st_uid == 0 else {
            return "the socket \(path) belongs to another user (\(owner(status.st_uid)))"
        }
        return nil
    }

    /// Why the process serving the connected socket `fd` may not be trusted, or nil.
    static func peerProblem(_ fd: Int32, path: String, userID: uid_t = geteuid()) -> String? {
        guard let peer = PlatformCalls.peerUserID(fd) else {
            return "who serves \(path) cannot be told"
        }
        guard peer == userID || peer == 0 || systemAccounts.contains(peer) else {
            return "\(path) is served by another user's process (\(owner(peer)))"
        }
        return nil
    }

    /// The accounts the system's usbmuxd runs as after it bound its socket as root (Debian's
    /// `usbmux`, macOS's `_usbmuxd`): no other user can be them.
    static let systemAccounts: Set<uid_t> = {
        let names: [String] = ["usbmux", "_usbmuxd"]
        return Set(names.compactMap { name in getpwnam(name).map { $0.pointee.pw_uid } })
    }()

    /// The error a run ends with when it would use an untrusted usbmuxd.
    static func refusal(_ address: String, _ problem: String, step: String) -> MobileDeviceError {
        MobileDeviceError(
            .usbmuxdUnavailable, step: step, device: nil,
            reason: "refusing the usbmuxd at \(address): \(problem); another local user could receive "
                + "this run's pair records, apps and secrets there",
            nextStep: nextStep, isTransient: false)
    }

    static let nextStep =
        "Use a usbmuxd socket in a folder only you (or root) can change, e.g. "
        + "hadeploy muxer --socket \"$XDG_RUNTIME_DIR/hadeploy-usbmuxd\" and "
        + "USBMUXD_SOCKET_ADDRESS=UNIX:$XDG_RUNTIME_DIR/hadeploy-usbmuxd."

    /// `uid N (name)`, for messages.
    static func owner(_ uid: uid_t) -> String {
        if let entry = getpwuid(uid), let name = entry.pointee.pw_name {
            return "uid \(uid), \(String(cString: name))"
        }
        return "uid \(uid)"
    }

    private static func folderProblem(_ path: String, userID: uid_t, strict: Bool) -> String? {
        var status = stat()
        guard lstat(path, &status) == 0 else {
            return "\(path) cannot be checked (\(String(cString: strerror(errno))))"
        }
        guard status.st_mode & S_IFMT == S_IFDIR else { return "\(path) is not a folder" }
        guard status.st_uid == userID || status.st_uid == 0 else {
            return "its folder \(path) belongs to another user (\(owner(status.st_uid)))"
        }
        let writable = status.st_mode & 0o022 != 0
        let sticky = status.st_mode & 0o1000 != 0
        if writable && (strict || !sticky) {
            return "its folder \(path) can be changed by other users (mode "
                + String(status.st_mode & 0o7777, radix: 8) + ")"
        }
        return nil
    }
}
