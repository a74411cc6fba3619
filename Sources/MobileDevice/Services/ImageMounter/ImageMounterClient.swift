import CIMobileDevice
import Foundation

/// Owns a `mobile_image_mounter_client_t` (PROTOCOL.md §6). Use only on the device's worker.
final class ImageMounterClient: ServiceClient, @unchecked Sendable {
    /// Where iOS ≥ 7 stores an image received with ReceiveBytes (what ideviceimagemounter sends).
    static let stagingPath = "/private/var/mobile/Media/PublicStaging/staging.dimage"

    init(device: DeviceHandle, descriptor: ServiceDescriptor, identity: DeviceIdentity) throws {
        try super.init(
            device: device, descriptor: descriptor, identity: identity,
            success: MOBILE_IMAGE_MOUNTER_E_SUCCESS,
            new: mobile_image_mounter_new,
            connectionDepth: 3,
            failure: { ImageMounterClient.error($0, step: "mobile_image_mounter_new", identity: identity) },
            release: {
                _ = mobile_image_mounter_hangup($0)
                _ = mobile_image_mounter_free($0)
            })
    }

    /// Whether a Developer image is mounted: newer firmware lists signatures, older says ImagePresent.
    func isDeveloperImageMounted() throws -> Bool {
        var node: plist_t?
        let result = mobile_image_mounter_lookup_image(raw, "Developer", &node)
        let reply = PlistBridge.take(node)
        guard result == MOBILE_IMAGE_MOUNTER_E_SUCCESS, let reply else {
            throw Self.error(result, step: "mobile_image_mounter_lookup_image", identity: identity)
        }
        if let signatures = reply["ImageSignature"]?.array { return !signatures.isEmpty }
        return reply["ImagePresent"]?.bool ?? false
    }

    /// Streams the image file (never whole in memory) with ReceiveBytes, then mounts it.
    func uploadAndMount(image: URL, signature: Data) throws {
        let reader = try ImageFileReader(url: image)
        let size = reader.size
        let unmanaged = Unmanaged.passRetained(reader)
        defer { unmanaged.release() }
        let upload = signature.withUnsafeBytes { sig in
            // Through the shim: the signature's types differ between libimobiledevice 1.3.0 and 1.4.0.
            hadeploy_mobile_image_mounter_upload_image(
                raw, "Developer", size, sig.baseAddress, sig.count,
                { buffer, length, context in
                    guard let buffer, let context else { return -1 }
                    let reader = Unmanaged<ImageFileReader>.fromOpaque(context).takeUnretainedValue()
                    return reader.read(into: buffer, length: length)
                }, unmanaged.toOpaque())
        }
        if let failure = reader.failure {
            throw MobileDeviceError(
                .hostIO, step: "read \(image.path)", device: identity, reason: failure,
                nextStep: "Check that the Developer Disk Image file is readable and complete.")
        }
        guard upload == MOBILE_IMAGE_MOUNTER_E_SUCCESS else {
            throw Self.error(upload, step: "mobile_image_mounter_upload_image", identity: identity)
        }
        var node: plist_t?
        let mount = signature.withUnsafeBytes { sig in
            hadeploy_mobile_image_mounter_mount_image(
                raw, Self.stagingPath, sig.baseAddress, sig.count, "Developer", &node)
        }
        let reply = PlistBridge.take(node)
        guard mount == MOBILE_IMAGE_MOUNTER_E_SUCCESS else {
            throw Self.error(mount, step: "mobile_image_mounter_mount_image", identity: identity)
        }
        // The library returns success whenever a reply arrived; the verdict is inside it.
        if let failure = reply?["Error"]?.string {
            let detail = reply?["DetailedError"]?.string ?? ""
            if detail.contains("already mounted") { return }
            throw Self.mountRefusal(failure, detail: detail, identity: identity)
        }
    }

    static func mountRefusal(_ failure: String, detail: String, identity: DeviceIdentity) -> MobileDeviceError
    {
        if detail.localizedCaseInsensitiveContains("developer mode") {
            return MobileDeviceError(
                .developerImageMountFailed, step: "mobile_image_mounter_mount_image", device: identity,
                reason: "\(failure): \(detail)",
                nextStep:
                    "Turn on Developer Mode: Settings > Privacy & Security > Developer Mode, restart, confirm."
            )
        }
        if failure == "DeviceLocked" {
            return MobileDeviceError(
                .passcodeLocked, step: "mobile_image_mounter_mount_image", device: identity,
                reason: "the device refused to mount while locked", nextStep: "Then retry.", isTransient: true
            )
        }
        return MobileDeviceError(
            .developerImageMountFailed, step: "mobile_image_mounter_mount_image", device: identity,
            reason: detail.isEmpty ? failure : "\(failure): \(detail)",
            nextStep:
                "Check that the image and its .signature come from the same Xcode DeviceSupport folder "
                + "and match the device's iOS version.")
    }

    static func error(_ code: mobile_image_mounter_error_t, step: String, identity: DeviceIdentity)
        -> MobileDeviceError
    {
        switch code {
        case MOBILE_IMAGE_MOUNTER_E_DEVICE_LOCKED:
            return MobileDeviceError(
                .passcodeLocked, step: step, device: identity, reason: "the device is locked (DeviceLocked)",
                nextStep: "Then retry.", isTransient: true)
        case MOBILE_IMAGE_MOUNTER_E_COMMAND_FAILED:
            return MobileDeviceError(
                .developerImageMountFailed, step: step, device: identity,
                reason: "the device refused the image upload",
                nextStep: "Check that the image matches the device's iOS version, then retry.")
        default:
            return MobileDeviceError.connectionBroke(
                step: step, device: identity,
                reason: "the image mounter connection failed (error \(code.rawValue))")
        }
    }
}

/// Feeds the image upload callback from a file, a buffer at a time.
final class ImageFileReader: @unchecked Sendable {
    let size: Int
    private let handle: FileHandle
    private(set) var failure: String?

    init(url: URL) throws {
        handle = try FileHandle(forReadingFrom: url)
        size = Int(try handle.seekToEnd())
        try handle.seek(toOffset: 0)
    }

    deinit { try? handle.close() }

    func read(into buffer: UnsafeMutableRawPointer, length: Int) -> Int {
        do {
            let data = try handle.read(upToCount: length) ?? Data()
            data.copyBytes(to: buffer.assumingMemoryBound(to: UInt8.self), count: data.count)
            return data.count
        } catch {
            failure = "\(error)"
            return -1
        }
    }
}
