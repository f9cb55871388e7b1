import Foundation
import Testing
import WorkoutServer

/// Setting the server up: its data folder is private, and its errors never print a secret.
@Suite("server setup", .serialized)
struct ServerSetupTests {
    static func mode(_ path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return try #require((attributes[.posixPermissions] as? NSNumber)?.intValue, "no mode for \(path)") & 0o777
    }

    @Test func aNewDataFolderItsUploadsAndItsDirectoryAreReadableByTheOwnerOnly() async throws {
        let parent = FileManager.default.temporaryDirectory.appendingPathComponent("workout-setup-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: parent) }
        let folder = parent + "/server"
        let server = try await TestServer.start(folder: folder)
        let token = try server.directory.addAthlete(name: "ida").token
        let upload = try await server.send("POST", "/v1/workouts", token: token, body: try SharedData.bytes("fp_sample-activity-indoor-trainer"))
        await server.stop()
        #expect(upload.status < 500, "\(upload.text)")
        #expect(try Self.mode(folder) == 0o700)
        #expect(try Self.mode(folder + "/uploads") == 0o700)
        #expect(try Self.mode(folder + "/athletes") == 0o700)
        for file in ["directory.sqlite", "directory.sqlite-wal", "directory.sqlite-shm"]
        where FileManager.default.fileExists(atPath: folder + "/" + file) {
            #expect(try Self.mode(folder + "/" + file) == 0o600, "\(file)")
        }
        #expect(ServerDirectory.permissionWarning(folder: folder) == nil)
    }

    @Test func anExistingDataFolderOthersCanReadIsWarnedAboutWithTheFixAndNeverChmodded() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("workout-setup-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try FileManager.default.createDirectory(
            atPath: folder + "/uploads", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        _ = chmod(folder, 0o755)
        _ = chmod(folder + "/uploads", 0o755)
        #expect(FileManager.default.createFile(
            atPath: folder + "/directory.sqlite", contents: nil, attributes: [.posixPermissions: 0o644]))
        _ = chmod(folder + "/directory.sqlite", 0o644)
        let warning = try #require(ServerDirectory.permissionWarning(folder: folder))
        #expect(warning.contains("chmod 700 \(folder)") && warning.contains(folder + "/uploads"))
        #expect(warning.contains("chmod 600 \(folder)/directory.sqlite"), "\(warning)")
        let server = try await TestServer.start(folder: folder)
        await server.stop()
        #expect(try Self.mode(folder) == 0o755 && Self.mode(folder + "/uploads") == 0o755)
        #expect(try Self.mode(folder + "/directory.sqlite") == 0o644)
    }

    @Test func aMalformedPostgresURLIsReportedWithoutItsPassword() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("workout-setup-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        for url in ["postgres://ida:s3cret-pw@/workouts", "postgres://ida:s3cret-pw@db example/workouts"] {
            do {
                _ = try WorkoutServer(configuration: ServerConfiguration(dataFolder: folder, postgresURL: url))
                Issue.record("\(url) was accepted")
            } catch {
                let message = "\(error)"
                #expect(!message.contains("s3cret-pw"), "\(message)")
                #expect(message.contains("postgres://ida:***@"), "\(message)")
            }
        }
    }
}
