import Foundation

/// A Developer Disk Image and its signature on this computer.
public struct DeveloperImage: Sendable, Equatable {
    public let image: URL
    public let signature: URL
}

/// Finds `DeveloperDiskImage.dmg` + `.signature` for an iOS version in Xcode's DeviceSupport
/// layout: `<dir>/<major.minor>/` or `<dir>/<major.minor> (<build>)/`.
public enum DeveloperImageLocator {
    public static let imageName = "DeveloperDiskImage.dmg"

    public enum Outcome: Sendable, Equatable {
        case found(DeveloperImage)
        /// Every image path looked at, in search order (and images found without a signature).
        case missing(lookedAt: [String], unsignedImages: [String])
    }

    public static func locate(
        version: IOSVersion, build: String?, in directories: [URL], fileManager: FileManager = .default
    ) -> Outcome {
        let key = version.majorMinor
        var looked: [String] = []
        var unsigned: [String] = []
        for directory in directories {
            var folders = [directory.appendingPathComponent(key)]
            if let build, !build.isEmpty {
                folders.append(directory.appendingPathComponent("\(key) (\(build))"))
            }
            // Any other build of the same major.minor, e.g. "15.8 (19H370)" for a 15.8.3 device.
            let others = ((try? fileManager.contentsOfDirectory(atPath: directory.path)) ?? [])
                .filter { $0.hasPrefix("\(key) (") && $0.hasSuffix(")") }
                .sorted()
                .map { directory.appendingPathComponent($0) }
            for folder in others where !folders.contains(folder) { folders.append(folder) }
            for folder in folders {
                let image = folder.appendingPathComponent(imageName)
                let signature = folder.appendingPathComponent(imageName + ".signature")
                looked.append(image.path)
                guard fileManager.fileExists(atPath: image.path) else { continue }
                if fileManager.fileExists(atPath: signature.path) {
                    return .found(DeveloperImage(image: image, signature: signature))
                }
                unsigned.append(image.path)
            }
        }
        return .missing(lookedAt: looked, unsignedImages: unsigned)
    }

    /// The error for a missing image: the file needed and every place looked at.
    static func missingError(
        version: IOSVersion, build: String?, lookedAt: [String], unsignedImages: [String],
        device: DeviceIdentity
    ) -> MobileDeviceError {
        let needed = "\(version.majorMinor)/\(imageName) and \(imageName).signature"
        var reason = "no Developer Disk Image for iOS \(version.majorMinor)"
        if let build, !build.isEmpty { reason += " (build \(build))" }
        if lookedAt.isEmpty {
            reason += "; no DeviceSupport directory is configured"
        } else {
            reason += "; looked at: " + lookedAt.joined(separator: ", ")
        }
        if !unsignedImages.isEmpty {
            reason += "; found without a .signature next to it: " + unsignedImages.joined(separator: ", ")
        }
        return MobileDeviceError(
            .developerImageMissing, step: "find Developer Disk Image", device: device, reason: reason,
            nextStep:
                "Copy \(needed) from Xcode (Xcode.app/Contents/Developer/Platforms/iPhoneOS.platform/"
                + "DeviceSupport/\(version.majorMinor)/) into one of those directories, or set ddi_dir "
                + "in devices.yaml.")
    }
}
