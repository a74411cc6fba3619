import Foundation
import TestSupport
import Testing

@testable import MobileDevice

@Suite struct DeveloperImageLocatorTests {
    let root: URL

    init() throws {
        root = try temporaryDirectory("ddi")
    }

    private func place(_ folder: String, in base: URL, signature: Bool = true) throws {
        let directory = base.appendingPathComponent(folder)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data("dmg".utf8).write(to: directory.appendingPathComponent("DeveloperDiskImage.dmg"))
        if signature {
            try Data("sig".utf8).write(
                to: directory.appendingPathComponent("DeveloperDiskImage.dmg.signature"))
        }
    }

    @Test func findsTheMajorMinorFolder() throws {
        try place("15.8", in: root)
        let outcome = DeveloperImageLocator.locate(version: IOSVersion("15.8.3"), build: "19H386", in: [root])
        guard case .found(let image) = outcome else {
            Issue.record("expected to find the image, got \(outcome)")
            return
        }
        #expect(image.image.path == root.path + "/15.8/DeveloperDiskImage.dmg")
        #expect(image.signature.path == root.path + "/15.8/DeveloperDiskImage.dmg.signature")
    }

    @Test func findsAFolderWithABuildSuffix() throws {
        let other = root.appendingPathComponent("second")
        try place("9.3 (13E230)", in: other)
        let outcome = DeveloperImageLocator.locate(
            version: IOSVersion("9.3.5"), build: "13G36", in: [root, other])
        guard case .found(let image) = outcome else {
            Issue.record("expected to find the image, got \(outcome)")
            return
        }
        #expect(image.image.path.hasSuffix("second/9.3 (13E230)/DeveloperDiskImage.dmg"))
    }

    @Test func missingImageNamesTheFileAndEveryPlaceLooked() throws {
        let other = root.appendingPathComponent("second")
        try place("16.4", in: other, signature: false)
        let outcome = DeveloperImageLocator.locate(
            version: IOSVersion("16.4.1"), build: "20E252", in: [root, other])
        guard case .missing(let looked, let unsigned) = outcome else {
            Issue.record("expected a miss, got \(outcome)")
            return
        }
        #expect(looked.contains(root.appendingPathComponent("16.4/DeveloperDiskImage.dmg").path))
        #expect(looked.contains(root.appendingPathComponent("16.4 (20E252)/DeveloperDiskImage.dmg").path))
        #expect(looked.contains(other.appendingPathComponent("16.4/DeveloperDiskImage.dmg").path))
        #expect(unsigned == [other.appendingPathComponent("16.4/DeveloperDiskImage.dmg").path])
        let error = DeveloperImageLocator.missingError(
            version: IOSVersion("16.4.1"), build: "20E252", lookedAt: looked, unsignedImages: unsigned,
            device: DeviceIdentity(name: "iPhone", udid: "X"))
        #expect(error.kind == .developerImageMissing)
        #expect(
            error.description.contains("16.4/DeveloperDiskImage.dmg and DeveloperDiskImage.dmg.signature"))
        for path in looked { #expect(error.description.contains(path)) }
    }

    @Test func noConfiguredDirectoryIsSaid() {
        let error = DeveloperImageLocator.missingError(
            version: IOSVersion("15.8"), build: nil, lookedAt: [], unsignedImages: [],
            device: DeviceIdentity(name: nil, udid: "X"))
        #expect(error.description.contains("no DeviceSupport directory is configured"))
    }
}
