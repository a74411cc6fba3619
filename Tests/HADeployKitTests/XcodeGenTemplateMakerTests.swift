import Testing

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
