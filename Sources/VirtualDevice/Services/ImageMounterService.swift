import Foundation

/// com.apple.mobile.mobile_image_mounter for the pre-iOS-17 Developer disk image (PROTOCOL.md §6).
///
/// iOS 14 added CopyDevices (the mounted-image list pymobiledevice3 reads first), UnmountImage and
/// QueryNonce; older firmware answers them UnknownCommand and hangs up, as pymobiledevice3 notes of
/// a real iOS 12 mobile_storage_proxy. QueryDeveloperModeStatus exists from iOS 16.
struct ImageMounterService {
    let runtime: DeviceRuntime
    let stream: ByteStream

    /// Developer disk images are a few hundred MB at most.
    static let maximumImageSize = 2 * 1024 * 1024 * 1024

    func run() async throws {
        var receivedImage = false
        let major = runtime.profile.majorVersion
        // iOS 17 replaced the Developer disk image with the personalized one.
        if major >= 17 {
            return try await PersonalizedImageMounterService(runtime: runtime, stream: stream).run()
        }
        while true {
            let request = try await stream.readDictionary(timeout: .seconds(120))
            switch request["Command"] as? String ?? "" {
            case "LookupImage":
                let signature = await runtime.developerImageSignature
                if runtime.profile.majorVersion < 10 {
                    // Older firmware answers with ImagePresent (PROTOCOL.md §6.2).
                    var reply: [String: Any] = ["ImagePresent": signature != nil, "Status": "Complete"]
                    if let signature { reply["ImageSignature"] = signature }
                    try await stream.writePropertyList(reply)
                } else {
                    try await stream.writePropertyList([
                        "ImageSignature": signature.map { [$0] } ?? [], "Status": "Complete",
                    ])
                }
            case "ReceiveBytes":
                if runtime.hasFault("passcodeLocked") {
                    try await stream.writePropertyList(["Error": "DeviceLocked", "Status": "Failed"])
                    continue
                }
                let size = request["ImageSize"] as? Int ?? 0
                guard size > 0, size <= Self.maximumImageSize else {
                    try await stream.writePropertyList(["Error": "InvalidImageSize", "Status": "Failed"])
                    continue
                }
                try await stream.writePropertyList(["Status": "ReceiveBytesAck"])
                try await receive(size: size)
                receivedImage = true
                try await stream.writePropertyList(["Status": "Complete"])
            case "MountImage":
                try await mount(request, received: receivedImage)
            case "CopyDevices" where major >= 14:
                try await copyDevices()
            case "UnmountImage" where major >= 14:
                try await unmount(request["MountPath"] as? String ?? "")
            case "QueryNonce" where major >= 14:
                try await stream.writePropertyList([
                    "PersonalizationNonce": Data(runtime.identity.udid.utf8.prefix(20)), "Status": "Complete",
                ])
            case "QueryDeveloperModeStatus" where major >= 16:
                try await stream.writePropertyList(["DeveloperModeStatus": true, "Status": "Complete"])
            case "Hangup":
                try await stream.writePropertyList(["Status": "Complete"])
                return
            default:
                try await stream.writePropertyList(["Error": "UnknownCommand", "Status": "Failed"])
                if major < 14 { return }
            }
        }
    }

    private func copyDevices() async throws {
        var entries: [[String: Any]] = []
        if let signature = await runtime.developerImageSignature {
            entries.append([
                "DeviceType": "DiskImage", "DiskImageType": "Developer", "ImageSignature": signature,
                "IsMounted": true, "IsReadOnly": true, "MountPath": "/Developer", "DevicePath": "/dev/disk2",
                "BackingImage": "/private/var/run/mobile_image_mounter/DeveloperDiskImage.dmg",
            ])
        }
        try await stream.writePropertyList(["EntryList": entries, "Status": "Complete"])
    }

    private func unmount(_ mountPath: String) async throws {
        guard mountPath == "/Developer", await runtime.unmountDeveloperImage() else {
            return try await stream.writePropertyList([
                "Error": "InternalError",
                "DetailedError": "Error Domain=com.apple.MobileStorage.ErrorDomain Code=-2 "
                    + "\"There is no matching entry in the device map for \(mountPath).\"",
                "Status": "Failed",
            ])
        }
        try await stream.writePropertyList(["Status": "Complete"])
    }

    /// Exactly `size` raw bytes follow ReceiveBytesAck, without framing; streamed to disk.
    private func receive(size: Int) async throws {
        let url = runtime.paths.developerImage
        let fileSystem = runtime.fileSystem
        guard fileSystem.createFile(atPath: url.path, contents: nil) else {
            throw TransportError.closed("cannot create \(url.path)")
        }
        var remaining = size
        while remaining > 0 {
            let chunk = try await stream.read(upTo: min(remaining, 1024 * 1024), timeout: .seconds(30))
            _ = try fileSystem.append(Data(chunk.readableBytesView), toFileAtPath: url.path)
            remaining -= chunk.readableBytes
        }
    }

    private func mount(_ request: [String: Any], received: Bool) async throws {
        if runtime.hasFault("passcodeLocked") {
            return try await stream.writePropertyList(["Error": "DeviceLocked", "Status": "Failed"])
        }
        // iOS 16+ mounts no developer image while Developer Mode is off (pymobiledevice3:
        // DeveloperModeIsNotEnabledError).
        if runtime.profile.majorVersion >= 16, runtime.hasFault("developerModeOff") {
            return try await stream.writePropertyList([
                "Error": "DeveloperModeIsNotEnabled", "Status": "Failed",
            ])
        }
        if await runtime.isDeveloperImageMounted {
            return try await stream.writePropertyList([
                "Error": "ImageMountFailed",
                "DetailedError": "Error Domain=com.apple.MobileStorage.ErrorDomain Code=-2 "
                    + "\"/Developer is already mounted\"", "Status": "Failed",
            ])
        }
        guard let signature = request["ImageSignature"] as? Data, !signature.isEmpty else {
            return try await stream.writePropertyList([
                "Error": "ImageMountFailed", "DetailedError": "Missing image signature", "Status": "Failed",
            ])
        }
        let imageExists = runtime.fileSystem.fileExists(atPath: runtime.paths.developerImage.path)
        guard received || imageExists else {
            return try await stream.writePropertyList([
                "Error": "ImageMountFailed", "DetailedError": "No image was uploaded", "Status": "Failed",
            ])
        }
        await runtime.mountDeveloperImage(signature: signature)
        try await stream.writePropertyList(["Status": "Complete"])
    }
}
