import Foundation
import Testing
import WorkoutSensors
import WorkoutTestSupport

/// The repository's root.
private let repository = SharedData.repository

/// Validates `json` against docs/schemas/<schema>.schema.json with Python's jsonschema (in .venv-fit,
/// installed by the test command); returns the validator's complaints, empty when it validates.
func schemaErrors(_ json: String, schema: String) throws -> [String] {
    let python = repository.appendingPathComponent(".venv-fit/bin/python3").path
    try #require(
        FileManager.default.isExecutableFile(atPath: python),
        "no \(python): run scripts/test.sh, which installs the venv with jsonschema")
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("workout-json-\(UUID()).json")
    try Data(json.utf8).write(to: file)
    defer { try? FileManager.default.removeItem(at: file) }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: python)
    process.arguments = [repository.appendingPathComponent("scripts/validate-json.py").path, schema, file.path]
    let errors = Pipe()
    process.standardError = errors
    try process.run()
    let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    if process.terminationStatus == 0 { return [] }
    return text.isEmpty
        ? ["validate-json.py exited \(process.terminationStatus)"] : text.split(separator: "\n").map(String.init)
}

/// Every command's `--json` output, from real runs, against its schema in docs/schemas; and no
/// Swift-synthesised enum coding (`"_0"`) anywhere.
@Suite("JSON outputs and their schemas")
struct JSONSchemaTests {
    func check(_ arguments: [String], schema: String, status: Int32 = 0) throws {
        let result = try runCommand(arguments)
        #expect(result.status == status, "\(arguments.joined(separator: " ")): \(result.stderr)")
        #expect(!result.stdout.isEmpty)
        #expect(!result.stdout.contains("\"_0\""), "\(arguments[0]) --json has a synthesised enum coding")
        let errors = try schemaErrors(result.stdout, schema: schema)
        #expect(errors.isEmpty, "\(arguments[0]) --json does not match docs/schemas/\(schema).schema.json: \(errors)")
    }

    @Test func listShowQueryAndDeleteMatchTheirSchemas() throws {
        try withTwoRides { db, ids in
            try check(["list", "--db", db, "--json"], schema: "list")
            try check(["show", "--db", db, ids[0].uuidString, "--json"], schema: "show")
            try check(["query", "--db", db, "--type", "cycling", "--avg-heart-rate", ">10", "--json"], schema: "query")
            try check(["delete", "--db", db, ids[1].uuidString, "--json"], schema: "delete")
        }
    }

    @Test func replayMatchesItsSchemaWithPoolLengthsInMilliseconds() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("workout-json-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let db = folder.appendingPathComponent("store.sqlite").path
        try check(["replay", "pool-swim", "--db", db, "--json"], schema: "replay")
        let shown = try runCommand(["list", "--db", db, "--json"])
        // Metadata as plain values, dates with milliseconds.
        #expect(shown.stdout.contains("\"LengthKind\":\"active\""))
        #expect(shown.stdout.range(of: #""Strokes":\d+[,}]"#, options: .regularExpression) != nil)
        #expect(
            shown.stdout.range(of: #""start":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z""#, options: .regularExpression)
                != nil)
    }

    @Test func importOfAFileAndOfAFolderMatchTheSchema() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("workout-json-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let db = folder.appendingPathComponent("store.sqlite").path
        let file = sharedFIT("al2_920xt-lap-swim")
        let result = try runCommand(["import", file, "--compare", "--db", db, "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try schemaErrors(result.stdout, schema: "import").isEmpty)
        #expect(!result.stdout.contains("\"_0\""))
        // The device by name, its product number kept; a pool length's start to the millisecond.
        #expect(result.stdout.contains("\"ImportDevice\":\"Garmin Forerunner 920XT\""))
        #expect(result.stdout.contains("\"ImportProduct\":1765"))
        #expect(result.stdout.contains("\"start\":\"2015-01-05T08:06:08.687Z\""))
        // A folder: one outcome imported, one already there, one not a FIT file.
        let files = folder.appendingPathComponent("files")
        try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: file, toPath: files.appendingPathComponent("a.fit").path)
        try FileManager.default.copyItem(
            atPath: sharedFIT("fp_garmin-fenix-5-walk"), toPath: files.appendingPathComponent("b.fit").path)
        try Data("not a fit file".utf8).write(to: files.appendingPathComponent("c.fit"))
        try check(["import", files.path, "--db", db, "--json"], schema: "import", status: 1)
    }

    @Test func portsListAndChecksMatchTheSchema() throws {
        try check(["ports", "--json"], schema: "ports")
        let terminal = try PseudoTerminal()
        try check(["ports", terminal.path, "--json"], schema: "ports")
        try check(["ports", terminal.path, "/dev/null", "--json"], schema: "ports", status: 1)
    }

    @Test func theSchemasRefuseTheOldEnumCoding() throws {
        try withTwoRides { db, ids in
            let shown = try runCommand(["show", "--db", db, ids[0].uuidString, "--json"]).stdout
            #expect(try schemaErrors(shown, schema: "show").isEmpty)
            // The form of earlier versions: refused, so a regression cannot pass the schema checks.
            let old = shown.replacingOccurrences(
                of: "\"metadata\":{}", with: #""metadata":{"Strokes":{"int":{"_0":28}}}"#)
            try #require(old != shown)
            #expect(try !schemaErrors(old, schema: "show").isEmpty)
            let seconds = shown.replacingOccurrences(
                of: #"(\d\d:\d\d:\d\d)\.\d{3}Z"#, with: "$1Z", options: .regularExpression)
            #expect(try !schemaErrors(seconds, schema: "show").isEmpty)
        }
    }
}
