import Foundation
import NIOConcurrencyHelpers

/// Whether each iOS 17+ twin has its personalized Developer Disk Image mounted.
///
/// A real mount needs Apple's signing server (a TSS ticket per device and boot), which tests must
/// not depend on: a twin stands for a device whose image was mounted at its boot, so it reports
/// the image mounted until a client unmounts it (`mounter umount-personalized`); the next boot
/// mounts it again. While it is unmounted, RSD stops listing the developer services, as a device
/// does.
enum PersonalizedImages {
    private static let unmounted = NIOLockedValueBox<Set<String>>([])

    static func isMounted(udid: String, boot: Int) -> Bool {
        !unmounted.withLockedValue { $0.contains("\(udid)#\(boot)") }
    }

    static func setMounted(_ mounted: Bool, udid: String, boot: Int) {
        unmounted.withLockedValue { set in
            if mounted { set.remove("\(udid)#\(boot)") } else { set.insert("\(udid)#\(boot)") }
        }
    }

    /// The image's IM4M stand-in: fixed for a device and boot, as a ticket is.
    static func manifest(udid: String, boot: Int) -> Data {
        var bytes: [UInt8] = Array("IM4M".utf8)
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in "\(udid)#\(boot)".utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        for _ in 0..<60 {
            hash = (hash ^ 0x5A) &* 0x100_0000_01b3
            bytes.append(UInt8(truncatingIfNeeded: hash >> 24))
        }
        return Data(bytes)
    }
}

/// com.apple.mobile.mobile_image_mounter on iOS 17+: the personalized image (`/System/Developer`),
/// Developer Mode, and the personalization queries a mount makes (PROTOCOL.md §6 for the framing).
struct PersonalizedImageMounterService {
    let runtime: DeviceRuntime
    let stream: ByteStream

    static let mountPath = "/System/Developer"

    func run() async throws {
        let udid = runtime.udid
        while true {
            let request = try await stream.readDictionary(timeout: .seconds(120))
            let boot = await runtime.bootCount
            let mounted = PersonalizedImages.isMounted(udid: udid, boot: boot)
            let manifest = PersonalizedImages.manifest(udid: udid, boot: boot)
            switch request["Command"] as? String ?? "" {
            case "LookupImage":
                let personalized = request["ImageType"] as? String == "Personalized"
                try await stream.writePropertyList([
                    "ImageSignature": personalized && mounted ? [manifest] : [Data](), "Status": "Complete",
                ])
            case "CopyDevices":
                var entries: [[String: Any]] = []
                if mounted {
                    entries.append([
                        "DiskImageType": "Personalized", "PersonalizedImageType": "DeveloperDiskImage",
                        "ImageSignature": manifest, "IsMounted": true, "IsReadOnly": true,
                        "MountPath": Self.mountPath, "DevicePath": "/dev/disk4",
                        "BackingImage":
                            "/private/var/run/mobile_image_mounter/PersonalizedDeveloperDiskImage.dmg",
                    ])
                }
                try await stream.writePropertyList(["EntryList": entries, "Status": "Complete"])
            case "QueryDeveloperModeStatus":
                try await stream.writePropertyList(["DeveloperModeStatus": true, "Status": "Complete"])
            case "QueryNonce":
                try await stream.writePropertyList([
                    "PersonalizationNonce": Data(manifest.suffix(32)), "Status": "Complete",
                ])
            case "QueryPersonalizationIdentifiers":
                let model = runtime.model
                try await stream.writePropertyList([
                    "PersonalizationIdentifiers": [
                        "BoardId": model?.chipID == 0x8140 ? 12 : 2, "ChipID": model?.chipID ?? 0,
                        "SecurityDomain": 1, "UniqueChipID": Int(runtime.identity.uniqueChipID),
                        "Ap,ProductType": runtime.profile.productType, "Ap,SDKPlatform": "iphoneos",
                        "Ap,Target": runtime.profile.hardwareModel,
                    ],
                    "Status": "Complete",
                ])
            case "QueryPersonalizationManifest":
                // The device keeps no ticket for an image it has not mounted this boot: the host
                // must ask Apple's signing server (TSS) for one.
                try await stream.writePropertyList([
                    "Error": "MissingManifest", "DetailedError": "Personalization manifest not found",
                    "Status": "Failed",
                ])
            case "ReceiveBytes":
                let size = request["ImageSize"] as? Int ?? 0
                guard size > 0, size <= ImageMounterService.maximumImageSize else {
                    try await stream.writePropertyList(["Error": "InvalidImageSize", "Status": "Failed"])
                    continue
                }
                try await stream.writePropertyList(["Status": "ReceiveBytesAck"])
                var remaining = size
                while remaining > 0 {
                    remaining -= try await stream.read(upTo: min(remaining, 1 << 20), timeout: .seconds(30))
                        .readableBytes
                }
                try await stream.writePropertyList(["Status": "Complete"])
            case "MountImage":
                if mounted {
                    try await stream.writePropertyList([
                        "Error": "ImageMountFailed",
                        "DetailedError": "Error Domain=com.apple.MobileStorage.ErrorDomain Code=-2 "
                            + "\"\(Self.mountPath) is already mounted\"", "Status": "Failed",
                    ])
                } else if (request["ImageSignature"] as? Data)?.isEmpty ?? true {
                    try await stream.writePropertyList([
                        "Error": "ImageMountFailed", "DetailedError": "Missing personalization manifest",
                        "Status": "Failed",
                    ])
                } else {
                    PersonalizedImages.setMounted(true, udid: udid, boot: boot)
                    runtime.logger.info("personalized developer disk image mounted")
                    try await stream.writePropertyList(["Status": "Complete"])
                }
            case "UnmountImage":
                guard request["MountPath"] as? String == Self.mountPath, mounted else {
                    try await stream.writePropertyList([
                        "Error": "InternalError",
                        "DetailedError": "Error Domain=com.apple.MobileStorage.ErrorDomain Code=-2 "
                            + "\"There is no matching entry in the device map for "
                            + "\(request["MountPath"] as? String ?? "").\"",
                        "Status": "Failed",
                    ])
                    continue
                }
                PersonalizedImages.setMounted(false, udid: udid, boot: boot)
                runtime.logger.info("personalized developer disk image unmounted")
                try await stream.writePropertyList(["Status": "Complete"])
            case "Hangup":
                try await stream.writePropertyList(["Status": "Complete"])
                return
            default:
                try await stream.writePropertyList(["Error": "UnknownCommand", "Status": "Failed"])
            }
        }
    }
}
