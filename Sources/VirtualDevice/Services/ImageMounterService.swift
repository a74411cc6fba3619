import Foundation

/// com.apple.mobile.mobile_image_mounter for the pre-iOS-17 Developer disk image (PROTOCOL.md §6).
struct ImageMounterService {
    let runtime: DeviceRuntime
    let stream: ByteStream

    /// Developer disk images are a few hundred MB at most.
    static let maximumImageSize = 2 * 1024 * 1024 * 1024

    func run() async throws {
        var receivedImage = false
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
            case "Hangup":
                try await stream.writePropertyList(["Status": "Complete"])
                return
            default:
                try await stream.writePropertyList(["Error": "UnknownCommand", "Status": "Failed"])
            }
        }
    }

    /// Exactly `size` raw bytes follow ReceiveBytesAck, without framing; streamed to disk.
    private func receive(size: Int) async throws {
        let url = runtime.paths.developerImage
        guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
            throw TransportError.closed("cannot create \(url.path)")
        }
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        var remaining = size
        while remaining > 0 {
            let chunk = try await stream.read(upTo: min(remaining, 1024 * 1024), timeout: .seconds(30))
            try chunk.withUnsafeReadableBytes { try handle.write(contentsOf: $0) }
            remaining -= chunk.readableBytes
        }
    }

    private func mount(_ request: [String: Any], received: Bool) async throws {
        if runtime.hasFault("passcodeLocked") {
            return try await stream.writePropertyList(["Error": "DeviceLocked", "Status": "Failed"])
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
        let imageExists = FileManager.default.fileExists(atPath: runtime.paths.developerImage.path)
        guard received || imageExists else {
            return try await stream.writePropertyList([
                "Error": "ImageMountFailed", "DetailedError": "No image was uploaded", "Status": "Failed",
            ])
        }
        await runtime.mountDeveloperImage(signature: signature)
        try await stream.writePropertyList(["Status": "Complete"])
    }
}
