import Foundation
import HADeployCore
import TestSupport
import Testing

@testable import HADeployAdopt
@testable import HADeployKit

/// project.yml → Templates/project.yml.mustache: only the values regen.sh substituted change.
struct XcodeGenTemplateMakerTests {
    @Test func theRealProjectsLiteralBundleIDBecomesTheVariable() throws {
        // No regen.sh placeholder: the app target's own PRODUCT_BUNDLE_IDENTIFIER is the bundle id.
        let spec = """
            name: HADashboard
            options:
              bundleIdPrefix: com.hadashboard.app
            targets:
              HADashboard:
                settings:
                  base:
                    PRODUCT_BUNDLE_IDENTIFIER: "com.hadashboard.app"  # the app
                    DEVELOPMENT_TEAM: ABCDE12345
                    APP_GROUP: group.com.hadashboard.app
                    OTHER: com.hadashboard.apple
              HADashboardTests:
                settings:
                  base:
                    PRODUCT_BUNDLE_IDENTIFIER: com.hadashboard.app.tests
                    TEST_HOST: "$(BUILT_PRODUCTS_DIR)/HA Dashboard.app/HA Dashboard"
            """
        let template = try XcodeGenTemplateMaker().template(from: spec)
        #expect(template.bundleID == "com.hadashboard.app")
        let lines = template.text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.contains("  bundleIdPrefix: {{BUNDLE_ID}}"))
        #expect(lines.contains("        PRODUCT_BUNDLE_IDENTIFIER: {{BUNDLE_ID}}  # the app"))
        #expect(
            lines.contains("        DEVELOPMENT_TEAM: {{APPLE_TEAM_ID}}"), "a hard-coded team moves to .env")
        #expect(lines.contains("        APP_GROUP: group.{{{BUNDLE_ID}}}"))
        #expect(lines.contains("        OTHER: com.hadashboard.apple"), "a longer name is not the bundle id")
        #expect(lines.contains("        PRODUCT_BUNDLE_IDENTIFIER: {{{BUNDLE_ID}}}.tests"))
        #expect(lines.contains("        TEST_HOST: \"$(BUILT_PRODUCTS_DIR)/HA Dashboard.app/HA Dashboard\""))
        #expect((template.bundleIDUses, template.teamUses) == (4, 1))
        #expect(template.configurations == ["Debug", "Release"], "XcodeGen's two when configs: is absent")
    }

    @Test func declaredConfigurationsAreRead() throws {
        let spec = """
            name: App
            configs:
              Debug: debug
              Staging: release
              Release: release
            targets: {}
            """
        #expect(
            try XcodeGenTemplateMaker().template(from: spec).configurations == [
                "Debug", "Staging", "Release",
            ])
    }

    @Test func aSpecThatAlreadyHasMustacheTagsIsRefusedWithItsLine() {
        #expect(throws: AdoptionError.mustacheInSpec(line: 2)) {
            try XcodeGenTemplateMaker().template(from: "name: App\nsettings: {X: \"{{Y}}\"}\n")
        }
    }
}

/// `hadeploy init` writes the committed matrix, the `mac` device included; a project that does not
/// build the Mac Catalyst variant is told so rather than left to a failing build.
struct MacAdoptionTests {
    func notes(projectYML: String) throws -> [String] {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("adopt-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        try Data(projectYML.utf8).write(to: root.appendingPathComponent("project.yml"))
        let plan = try ProjectAdopter(root: root, variables: [:], fileSystem: TestHost.fileSystem).plan()
        #expect(plan.files.first { $0.path == "devices.yaml" }?.contents.contains("transport: mac") == true)
        return plan.notes.filter { $0.contains("Mac Catalyst") }
    }

    @Test func aProjectWithoutMacCatalystIsToldSo() throws {
        let base = """
            name: HADashboard
            targets:
              HADashboard:
                type: application
                platform: iOS
            %@
                settings:
                  configs:
                    Debug: {}
                    Release: {}
            """
        let enabled = try notes(
            projectYML: base.replacingOccurrences(
                of: "%@", with: "    supportedDestinations: [iOS, macCatalyst]"))
        #expect(enabled.isEmpty)
        let without = try notes(projectYML: base.replacingOccurrences(of: "%@", with: ""))
        #expect(without.count == 1)
        #expect(without.first?.contains("supportedDestinations: [iOS, macCatalyst]") == true)
    }
}
