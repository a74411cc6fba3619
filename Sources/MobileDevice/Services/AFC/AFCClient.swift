import CIMobileDevice
import Foundation
import HADeployCore

/// Owns an `afc_client_t`: file access under the service's root (`/var/mobile/Media` for
/// com.apple.afc, the CrashReporter directory for com.apple.crashreportcopymobile; PROTOCOL.md §4).
/// Use only on the device's worker.
final class AFCClient: ServiceClient, @unchecked Sendable {
    let service: String
    /// What must outlive this client: the house_arrest client whose connection it borrows.
    private let owner: AnyObject?

    init(device: DeviceHandle, descriptor: ServiceDescriptor, identity: DeviceIdentity) throws {
        self.service = descriptor.name
        self.owner = nil
        try super.init(
            device: device, descriptor: descriptor, identity: identity, success: AFC_E_SUCCESS,
            new: afc_client_new,
            connectionDepth: 2,
            failure: {
                AFCClient.error(
                    $0, step: "afc_client_new (\(descriptor.name))", path: nil, identity: identity)
            },
            release: { _ = afc_client_free($0) })
    }

    /// An AFC client on a connection another client owns (house_arrest after VendContainer); that
    /// owner is kept alive, and so freed after this client.
    init(raw: afc_client_t, device: DeviceHandle, identity: DeviceIdentity, service: String, owner: AnyObject)
    {
        self.service = service
        self.owner = owner
        super.init(
            handle: ClientHandle(raw: raw, device: device) { _ = afc_client_free($0) }, identity: identity)
    }

    /// `st_size`, `st_ifmt`, `st_mtime`… for a path, or nil when it does not exist.
    func fileInfo(_ path: String) throws -> [String: String]? {
        var list: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
        let result = afc_get_file_info(raw, path, &list)
        if result == AFC_E_OBJECT_NOT_FOUND { return nil }
        try check(result, "afc_get_file_info", path)
        return Self.takePairs(list)
    }

    func makeDirectory(_ path: String) throws {
        try check(afc_make_directory(raw, path), "afc_make_directory", path)
    }

    func readDirectory(_ path: String) throws -> [String] {
        var list: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
        try check(afc_read_directory(raw, path, &list), "afc_read_directory", path)
        return Self.takeList(list).filter { $0 != "." && $0 != ".." }
    }

    /// Removes a file or an empty directory; a missing path is not an error.
    func removePath(_ path: String) throws {
        let result = afc_remove_path(raw, path)
        if result == AFC_E_OBJECT_NOT_FOUND { return }
        try check(result, "afc_remove_path", path)
    }

    /// Removes a path and everything under it (iOS ≥ 6); a missing path is not an error.
    /// Removes one of hadeploy's own uploads. Only `PublicStaging/<name>` is ever removed: a path
    /// built from an artifact's contents must not reach the rest of the media partition (DCIM…).
    func removeTree(_ path: String) throws {
        let prefix = StagingUploader.stagingDirectory + "/"
        guard path.hasPrefix(prefix),
            ArtifactNames.isContainedRelativePath(String(path.dropFirst(prefix.count)))
        else {
            throw MobileDeviceError(
                .invalidArtifact, step: "remove \(path)", device: identity,
                reason: "refusing to remove \(path): hadeploy only removes its own uploads in \(prefix)",
                nextStep: "This is a bug in hadeploy; please report it with the artifact's Info.plist.")
        }
        let result = afc_remove_path_and_contents(raw, path)
        if result == AFC_E_OBJECT_NOT_FOUND { return }
        if result == AFC_E_OP_NOT_SUPPORTED || result == AFC_E_UNKNOWN_PACKET_TYPE {
            try removeRecursively(path)
            return
        }
        try check(result, "afc_remove_path_and_contents", path)
    }

    private func removeRecursively(_ path: String) throws {
        guard let info = try fileInfo(path) else { return }
        if info["st_ifmt"] == "S_IFDIR" {
            for name in try readDirectory(path) { try removeRecursively(path + "/" + name) }
        }
        try removePath(path)
    }

    func makeSymbolicLink(target: String, at path: String) throws {
        try check(afc_make_link(raw, AFC_SYMLINK, target, path), "afc_make_link", path)
    }

    func open(_ path: String, mode: afc_file_mode_t) throws -> UInt64 {
        var handle: UInt64 = 0
        try check(afc_file_open(raw, path, mode, &handle), "afc_file_open", path)
        return handle
    }

    func close(_ handle: UInt64, path: String) throws {
        try check(afc_file_close(raw, handle), "afc_file_close", path)
    }

    /// Writes the whole buffer as one FileWrite packet (libimobiledevice 1.3.0 does not split).
    func write(_ handle: UInt64, _ bytes: UnsafeRawBufferPointer, path: String) throws {
        var offset = 0
        while offset < bytes.count {
            var written: UInt32 = 0
            let chunk = UnsafeRawBufferPointer(rebasing: bytes[offset...])
            let result = afc_file_write(
                raw, handle, chunk.baseAddress?.assumingMemoryBound(to: CChar.self), UInt32(chunk.count),
                &written)
            try check(result, "afc_file_write", path)
            guard written > 0 else {
                throw MobileDeviceError(
                    .connectionLost, step: "afc_file_write", device: identity,
                    reason: "the device accepted 0 bytes of \(path)",
                    nextStep: "Check the cable and the free space on the device, then retry.",
                    isTransient: true)
            }
            offset += Int(written)
        }
    }

    /// Reads up to `buffer.count` bytes; 0 means end of file.
    func read(_ handle: UInt64, into buffer: UnsafeMutableRawBufferPointer, path: String) throws -> Int {
        var count: UInt32 = 0
        let result = afc_file_read(
            raw, handle, buffer.baseAddress?.assumingMemoryBound(to: CChar.self), UInt32(buffer.count), &count
        )
        if result == AFC_E_END_OF_DATA { return 0 }
        try check(result, "afc_file_read", path)
        return Int(count)
    }

    private func check(_ result: afc_error_t, _ step: String, _ path: String?) throws {
        guard result != AFC_E_SUCCESS else { return }
        throw Self.error(result, step: step, path: path, identity: identity)
    }

    static func error(_ code: afc_error_t, step: String, path: String?, identity: DeviceIdentity)
        -> MobileDeviceError
    {
        let target = path.map { " for \($0)" } ?? ""
        switch code {
        case AFC_E_MUX_ERROR, AFC_E_SERVICE_NOT_CONNECTED, AFC_E_NOT_ENOUGH_DATA, AFC_E_OP_TIMEOUT,
            AFC_E_IO_ERROR, AFC_E_OP_INTERRUPTED, AFC_E_READ_ERROR, AFC_E_WRITE_ERROR:
            return MobileDeviceError(
                .connectionLost, step: step, device: identity,
                reason: "the AFC connection broke\(target) (\(name(code)))",
                nextStep: "Check the cable (or the usbmuxd host) and keep the device unlocked, then retry.",
                isTransient: true)
        case AFC_E_NO_SPACE_LEFT:
            return MobileDeviceError(
                .hostIO, step: step, device: identity, reason: "the device is full\(target) (\(name(code)))",
                nextStep: "Free space on the device (Settings > General > iPad/iPhone Storage), then retry.")
        case AFC_E_PERM_DENIED:
            return MobileDeviceError(
                .protocolError, step: step, device: identity, reason: "permission denied\(target)",
                nextStep:
                    "Only paths under the service root are writable; this is a bug in hadeploy if it persists."
            )
        default:
            return MobileDeviceError(
                .protocolError, step: step, device: identity, reason: "AFC error\(target): \(name(code))",
                nextStep: "Replug the device and retry.", isTransient: code == AFC_E_OBJECT_BUSY)
        }
    }

    static func name(_ code: afc_error_t) -> String {
        let names: [Int32: String] = [
            1: "unknown error", 2: "header invalid", 3: "no resources", 4: "read error", 5: "write error",
            6: "unknown packet type", 7: "invalid argument", 8: "object not found",
            9: "object is a directory",
            10: "permission denied", 11: "service not connected", 12: "timeout", 13: "too much data",
            14: "end of data", 15: "not supported", 16: "object exists", 17: "object busy",
            18: "no space left",
            19: "would block", 20: "I/O error", 21: "interrupted", 22: "in progress", 23: "internal error",
            30: "mux error", 31: "out of memory", 32: "not enough data", 33: "directory not empty",
        ]
        return "\(names[code.rawValue] ?? "error") (\(code.rawValue))"
    }

    private static func takeList(_ list: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> [String] {
        guard let list else { return [] }
        defer { afc_dictionary_free(list) }
        var result: [String] = []
        var index = 0
        while let item = list[index] {
            result.append(String(cString: item))
            index += 1
        }
        return result
    }

    private static func takePairs(_ list: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> [String:
        String]
    {
        let flat = takeList(list)
        var result: [String: String] = [:]
        var index = 0
        while index + 1 < flat.count {
            result[flat[index]] = flat[index + 1]
            index += 2
        }
        return result
    }
}
