import HADeployCore
import Testing

@Suite struct ArtifactNamesTests {
    @Test(arguments: ["com.hadashboard.app", "io.hadashboard.app-beta", "com.example.HADashboard2"])
    func reverseDNSIdentifiersPass(_ identifier: String) {
        #expect(ArtifactNames.bundleIdentifierProblem(identifier) == nil)
    }

    @Test(arguments: [
        "", "../DCIM", "..", ".", "DCIM", "com..example", ".com.example", "com.example.", "com/example",
        "com.example\u{0}", "com.exämple.app", "com.example app",
    ])
    func anythingThatCouldBecomeAPathIsRefused(_ identifier: String) {
        #expect(ArtifactNames.bundleIdentifierProblem(identifier) != nil, "\(identifier.debugDescription)")
    }

    @Test func executableAndFolderNamesAreSingleComponents() {
        #expect(ArtifactNames.pathComponentProblem("HA Dashboard", what: "CFBundleExecutable") == nil)
        for bad in ["", ".", "..", "a/b", "../x", "x\u{0}"] {
            #expect(
                ArtifactNames.pathComponentProblem(bad, what: "CFBundleExecutable") != nil,
                "\(bad.debugDescription)")
        }
    }

    @Test func containedRelativePaths() {
        #expect(ArtifactNames.isContainedRelativePath("com.example.app"))
        #expect(ArtifactNames.isContainedRelativePath("Demo.app/Base.lproj/Main.strings"))
        for bad in ["", "/etc", "..", "../DCIM", "a/../../DCIM", "a//b", "a/./b", "a\u{0}"] {
            #expect(!ArtifactNames.isContainedRelativePath(bad), "\(bad.debugDescription)")
        }
    }
}
