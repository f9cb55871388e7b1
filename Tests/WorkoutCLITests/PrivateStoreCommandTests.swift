import Foundation
import Testing
import WorkoutSensors
import WorkoutTestSupport

@testable import WorkoutCLI

/// The store and the files the commands write are the owner's only; a world-readable store is reported with its fix.
@Suite("workout: private store and files")
struct PrivateStoreCommandTests {
    /// Reports and exports hold heart rate: the files are the owner's only (0600), also when they
    /// replace a world-readable file and whatever the umask.
    @Test func reportAndExportFilesAreCreatedOwnerOnly() throws {
        try withTwoRides { db, ids in
            let folder = try temporaryFolder("workout-cli")
            defer { try? FileManager.default.removeItem(at: folder) }
            func mode(_ path: String) throws -> Int {
                let attributes = try FileManager.default.attributesOfItem(atPath: path)
                return ((attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1) & 0o777
            }
            let previous = umask(0)
            defer { umask(previous) }
            let page = folder.appendingPathComponent("ride.html").path
            let existing = folder.appendingPathComponent("existing.fit").path
            #expect(FileManager.default.createFile(atPath: existing, contents: Data("old".utf8)))
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: existing)
            let report = try runCommand(["report", ids[0].uuidString, "--db", db, "--output", page])
            #expect(report.status == 0, "\(report.stderr)")
            #expect(try mode(page) == 0o600)
            for format in ["fit", "gpx", "tcx"] {
                let path = format == "fit" ? existing : folder.appendingPathComponent("ride.\(format)").path
                let export = try runCommand([
                    "export", ids[0].uuidString, "--format", format, "--db", db, "--output", path,
                ])
                #expect(export.status == 0, "\(export.stderr)")
                #expect(try mode(path) == 0o600, "\(format)")
            }
            #expect(try Data(contentsOf: URL(fileURLWithPath: existing)).count > 100)
            // Nothing but the outputs is left in the folder (no temporary files).
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == [
                    "existing.fit", "ride.gpx", "ride.html", "ride.tcx",
                ])
            // A folder that does not exist: a clear error, no file.
            let missing = folder.appendingPathComponent("no/such/folder/ride.html").path
            let failed = try runCommand(["report", ids[0].uuidString, "--db", db, "--output", missing])
            #expect(failed.status != 0)
            #expect(failed.stderr.contains("cannot write \(missing)") && failed.stderr.contains("--output"))
        }
    }

    @Test func aWorldReadableStoreIsReportedWithTheFixAndLeftAlone() throws {
        let folder = try temporaryFolder("workout-cli")
        defer { try? FileManager.default.removeItem(at: folder) }
        let data = folder.appendingPathComponent("workout-engine")
        let db = data.appendingPathComponent("workouts.sqlite").path
        let fresh = try runCommand(["list", "--db", db])
        #expect(fresh.status == 0)
        #expect(!fresh.stderr.contains("warning"), "\(fresh.stderr)")
        let mode = { (path: String) in
            (try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue
        }
        #expect(mode(data.path) == 0o700)
        #expect(mode(db) == 0o600)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: db)
        let exposed = try runCommand(["list", "--db", db])
        #expect(exposed.status == 0)
        #expect(exposed.stderr.contains("warning: the workout store can be read by other users"))
        #expect(exposed.stderr.contains("chmod 600 \(db)"))
        #expect(mode(db) == 0o644)
    }

    @Test func theFixTheWarningGivesWorksAfterTheCommandHasExited() throws {
        let folder = try temporaryFolder("workout-cli")
        defer { try? FileManager.default.removeItem(at: folder) }
        let data = folder.appendingPathComponent("workout-engine")
        let db = data.appendingPathComponent("workouts.sqlite").path
        #expect(try runCommand(["list", "--db", db]).status == 0)
        let mode = { (path: String) in
            (try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue
        }
        // As earlier versions left the store.
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: data.path)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: db)
        let exposed = try runCommand(["list", "--db", db])
        let warning = try #require(exposed.stderr.split(separator: "\n").first { $0.hasPrefix("warning:") })
        let command = try #require(warning.components(separatedBy: "run: ").last)
        // The user runs it once `list` has exited (and its WAL and shared-memory files are gone).
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/bin/sh")
        shell.arguments = ["-c", command]
        let errors = Pipe()
        shell.standardError = errors
        try shell.run()
        let complaint = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        shell.waitUntilExit()
        #expect(shell.terminationStatus == 0, "\(command): \(complaint)")
        #expect(mode(db) == 0o600)
        #expect(mode(data.path) == 0o700)
        let after = try runCommand(["list", "--db", db])
        #expect(!after.stderr.contains("warning"), "\(after.stderr)")
    }
}
