import Foundation
import Testing
import WorkoutFormats
import WorkoutTestSupport

@Suite("workout import and export")
struct ImportExportCommandTests {
    let folder: URL

    init() throws {
        folder = try temporaryFolder("workout-cli-fit")
    }

    var database: String { folder.appendingPathComponent("store.sqlite").path }

    @Test func importComparesAndExportWritesEveryFormat() throws {
        let imported = try runCommand([
            "import", sharedFIT("mk_triathlon_summary_last"), "--compare", "--db", database,
        ])
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(imported.stdout.contains("imported mk_triathlon_summary_last.fit as "))
        #expect(imported.stdout.contains("ours/device"))
        #expect(
            imported.lines.contains { $0.hasPrefix("session 3") && $0.contains("cycling") && $0.contains("178/178") })
        let listed = try runCommand(["list", "--db", database, "--json"])
        let workouts = try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]]
        let id = try #require(workouts?.first?["id"] as? String)
        for format in ["fit", "gpx", "tcx"] {
            let path = folder.appendingPathComponent("out.\(format)").path
            let exported = try runCommand(["export", id, "--format", format, "--output", path, "--db", database])
            #expect(exported.status == 0, "\(exported.stderr)")
            #expect(exported.stdout.hasPrefix("wrote \(path)"))
            let bytes = try #require(FileManager.default.contents(atPath: path))
            if format == "fit" {
                let file = try FITDecoder.decode([UInt8](bytes))
                #expect(file.sessions.map(\.sport) == [5, 3, 2, 3, 1])
            } else {
                #expect(String(decoding: bytes, as: UTF8.self).hasPrefix("<?xml version=\"1.0\""))
            }
        }
        // The same file again is refused with the workout's id.
        let again = try runCommand(["import", sharedFIT("mk_triathlon_summary_last"), "--db", database])
        #expect(again.status == 1)
        #expect(again.stderr.contains("already imported as workout \(id)"))
    }

    @Test func aDamagedFileImportsFlaggedOrIsRefusedWithItsByteOffsetWithoutSalvage() throws {
        var bytes = [UInt8](try #require(FileManager.default.contents(atPath: sharedFIT("al2_920xt-run"))))
        bytes[4000] ^= 0x01
        let path = folder.appendingPathComponent("damaged.fit").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let refused = try runCommand(["import", path, "--no-salvage", "--db", database])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("byte \(bytes.count - 2): file CRC"), "\(refused.stderr)")
        let listed = try runCommand(["list", "--db", database, "--json"])
        #expect(listed.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "[]")
        // By default what precedes the damage is imported, the workout flagged, the damage reported.
        let salvaged = try runCommand(["import", path, "--db", database])
        #expect(salvaged.status == 0, "\(salvaged.stderr)")
        #expect(salvaged.stdout.contains("anomaly: the file is damaged, byte \(bytes.count - 2): file CRC"))
        let shown = try runCommand(["list", "--db", database, "--json"])
        #expect(shown.stdout.contains("ImportDamage"))
    }

    @Test func aFolderComparisonEndsWithTheAgreementSummary() throws {
        let source = folder.appendingPathComponent("compare")
        try FileManager.default.createDirectory(at: source, withIntermediateDirectories: true)
        for name in ["fp_garmin-fenix-5-walk", "fp_strava-android-app"] {
            try FileManager.default.copyItem(
                atPath: sharedFIT(name), toPath: source.appendingPathComponent("\(name).fit").path)
        }
        let result = try runCommand(["import", source.path, "--compare", "--db", database])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.lines.map { $0.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ") }
        #expect(lines.contains("agreement with the device over 2 files (per session)"))
        #expect(lines.contains("sessions 2 2"))
        #expect(lines.contains("avg HR 1 1"))
        #expect(lines.contains("distance 1 2 1"))
        #expect(lines.contains("fp_strava-android-app.fit session 1: distance 928.25/11274.04"))
        // The file holds nothing that could give the device's figure: the summary says so.
        #expect(lines.contains { $0.hasPrefix("not in the file: the records' distance gains") && $0.contains("short of the 11274.04 m") })
        #expect(lines.contains { $0.hasPrefix("1 of the 1 disagreements are device figures no message of the file holds") })
        #expect(lines.contains("damaged files (imported up to the damage): fp_strava-android-app.fit"))
        let json = try runCommand([
            "import", source.path, "--compare", "--json", "--db", folder.appendingPathComponent("j.sqlite").path,
        ])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect((object["files"] as? [Any])?.count == 2)
        let checks = try #require((object["summary"] as? [String: Any])?["checks"] as? [[String: Any]])
        let distance = try #require(checks.first { $0["name"] as? String == "distance" })
        #expect(distance["agree"] as? Int == 1 && distance["total"] as? Int == 2)
        let disagreement = try #require((distance["disagreements"] as? [[String: Any]])?.first)
        #expect(disagreement["ours"] as? String == "928.25" && disagreement["device"] as? String == "11274.04")
        #expect((disagreement["notInFile"] as? String)?.contains("to 928.25 m") == true)
    }

    @Test func aFolderImportsEveryFITFileAndReportsFailures() throws {
        let source = folder.appendingPathComponent("files")
        try FileManager.default.createDirectory(at: source, withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            atPath: sharedFIT("al2_920xt-run"), toPath: source.appendingPathComponent("run.fit").path)
        try FileManager.default.copyItem(
            atPath: sharedFIT("al2_920xt-lap-swim"), toPath: source.appendingPathComponent("swim.FIT").path)
        try Data([1, 2, 3]).write(to: source.appendingPathComponent("broken.fit"))
        try Data("not a fit".utf8).write(to: source.appendingPathComponent("notes.txt"))
        let result = try runCommand(["import", source.path, "--db", database, "--json"])
        #expect(result.status == 1, "one file failed")
        let outcomes = try #require(
            try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]])
        #expect(outcomes.count == 3)
        #expect(outcomes.filter { $0["workout"] != nil }.count == 2)
        #expect(
            (outcomes.first { ($0["file"] as? String)?.hasSuffix("broken.fit") == true }?["error"] as? String)?
                .contains("byte 0") == true)
    }
}
