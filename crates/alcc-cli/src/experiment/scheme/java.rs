//! `java-CC[@KERNELCC]`: the Java library's sender (java/, `alcc-upload.jar`) with its own
//! controller CC (the library implements `copa[:...]` and `mdi[:...]`), in framed mode, the
//! way a phone app sends (issue 17).
//!
//! - Uploading (`direction = "up"`, what it is for): `java -jar alcc-upload.jar /dev/zero
//!   SERVER:PORT --cc CC` in the client namespace, stopped by `timeout` at the deadline, to
//!   `alcc serve --receive`.
//! - Downloading: the library's `org.alcc.tools.Send` sends from the server side to
//!   `alcc get --mode framed` (as bench/java-vs-rust.sh ran it before the uplink existed).
//!
//! Java cannot choose its socket's congestion control: the namespace's default is set to
//! KERNELCC (default `cubic`, as `alcc-CC`) first ([`super::with_default_cc`]); a kernel that
//! refuses it (a namespace may only choose an allowed one) fails the run naming the allowed.
//! The jar is `$ALCC_JAVA_JAR`, by default `java/target/alcc-upload.jar` of the checkout whose
//! `target/release/alcc` runs the sweep (`make build` makes it).

use std::path::{Path, PathBuf};

use super::alcc::DEFAULT_UNDERLAY;
use super::{
    is_cc_spec, is_word, upload_receiver, with_default_cc, Client, Family, Kind, Need, RunContext, RunMode,
    Transfer,
};
use crate::experiment::runner::shell_quote;

/// The controllers the Java library implements (java/.../cc/Controllers.java).
pub const JAVA_CCS: &[&str] = &["copa", "mdi"];

/// The uploader's jar: `$ALCC_JAVA_JAR`, else `java/target/alcc-upload.jar` of the checkout
/// whose `target/{release,debug}/alcc` is `alcc`.
pub fn upload_jar(alcc: &Path) -> PathBuf {
    match std::env::var_os("ALCC_JAVA_JAR").filter(|j| !j.is_empty()) {
        Some(j) => PathBuf::from(j),
        None => {
            let repo = alcc.parent().and_then(Path::parent).and_then(Path::parent).unwrap_or(Path::new("."));
            repo.join("java").join("target").join("alcc-upload.jar")
        }
    }
}

/// The Java library's sender with controller `cc` over kernel `kernel`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JavaScheme {
    /// The controller spec (`mdi`, `copa:delta=0.5`).
    pub cc: String,
    /// The kernel congestion control under it (the namespace's default).
    pub kernel: String,
}

impl JavaScheme {
    /// Parses the text after `java-`: `CC` or `CC@KERNELCC`.
    pub fn parse(rest: &str) -> Result<JavaScheme, String> {
        let (cc, kernel) = rest.rsplit_once('@').unwrap_or((rest, DEFAULT_UNDERLAY));
        if !is_cc_spec(cc) {
            return Err(format!("`{cc}` is not a controller spec (like mdi or copa:delta=0.5)"));
        }
        let name = cc.split(':').next().unwrap_or(cc);
        if !JAVA_CCS.contains(&name) {
            return Err(format!("the Java library implements {}, not `{name}`", JAVA_CCS.join(" and ")));
        }
        if !is_word(kernel) {
            return Err(format!("`{kernel}` is not a kernel congestion control name (cubic, reno, bbr)"));
        }
        Ok(JavaScheme { cc: cc.to_string(), kernel: kernel.to_string() })
    }

    fn jar_q(&self, run: &RunContext) -> String {
        run.quoted(&upload_jar(run.alcc))
    }
}

/// What every Java run needs: a JVM and the built jar.
fn java_needs() -> Vec<Need> {
    let mut needs = vec![Need::Program {
        name: "java",
        install: "scripts/setup.sh installs it (apt-get install default-jdk)",
    }];
    // The sweep runs this same binary.
    if let Ok(alcc) = std::env::current_exe() {
        needs.push(Need::File {
            path: upload_jar(&alcc),
            remedy: "the Java uploader is not built: run `make build` (or `cd java && mvn package`), or set \
                     ALCC_JAVA_JAR"
                .to_string(),
        });
    }
    needs
}

impl Kind for JavaScheme {
    fn family(&self) -> Family {
        Family::Java
    }

    fn cc(&self) -> &str {
        &self.cc
    }

    fn underlay(&self) -> &str {
        &self.kernel
    }

    fn mode(&self) -> RunMode {
        RunMode::Framed
    }

    fn label(&self) -> String {
        format!(
            "the Java library's {} sending from the server above kernel {} (framed mode)",
            self.cc, self.kernel
        )
    }

    fn server(&self, run: &RunContext) -> String {
        let send = format!(
            "exec java -cp {} org.alcc.tools.Send --port {} --seconds {} --cc {}",
            self.jar_q(run),
            run.port,
            run.server_seconds,
            shell_quote(&self.cc)
        );
        with_default_cc(&self.kernel, &send)
    }

    fn client(&self, run: &RunContext) -> Client {
        Client::alcc_get(run, RunMode::Framed)
    }

    fn needs(&self) -> Vec<Need> {
        java_needs()
    }

    fn upload(&self) -> Result<Box<dyn Transfer + '_>, String> {
        Ok(Box::new(JavaUpload(self)))
    }
}

/// `java-CC` uploading: the command-line uploader that stands in for a phone app.
struct JavaUpload<'a>(&'a JavaScheme);

impl Transfer for JavaUpload<'_> {
    fn mode(&self) -> RunMode {
        RunMode::Framed
    }

    fn label(&self) -> String {
        format!("Java uploader (alcc-upload.jar): {} above kernel {} (framed mode)", self.0.cc, self.0.kernel)
    }

    fn server(&self, run: &RunContext) -> String {
        upload_receiver(run, RunMode::Framed)
    }

    fn client(&self, run: &RunContext) -> Client {
        let upload = format!(
            "timeout {} java -jar {} /dev/zero \"$ALCC_SERVER:{}\" --cc {}",
            run.duration_s,
            self.0.jar_q(run),
            run.port,
            shell_quote(&self.0.cc)
        );
        // timeout's 124: stopped at the deadline.
        Client { command: with_default_cc(&self.0.kernel, &upload), deadline_status: 124 }
    }

    fn needs(&self) -> Vec<Need> {
        java_needs()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run() -> RunContext<'static> {
        RunContext {
            alcc: Path::new("/src/target/release/alcc"),
            dir: Path::new("/d"),
            duration_s: 20.0,
            port: 9000,
            offer_bytes: 100,
            server_seconds: 22.0,
            clients: 1,
            server: 0,
        }
    }

    #[test]
    fn the_jar_is_beside_the_binarys_checkout() {
        if std::env::var_os("ALCC_JAVA_JAR").filter(|j| !j.is_empty()).is_none() {
            assert_eq!(upload_jar(run().alcc), PathBuf::from("/src/java/target/alcc-upload.jar"));
        }
    }

    #[test]
    fn only_the_librarys_controllers() {
        let s = JavaScheme::parse("mdi").unwrap();
        assert_eq!((s.cc.as_str(), s.kernel.as_str()), ("mdi", "cubic"));
        let s = JavaScheme::parse("copa:delta=0.5@reno").unwrap();
        assert_eq!((s.cc.as_str(), s.kernel.as_str()), ("copa:delta=0.5", "reno"));
        let e = JavaScheme::parse("verus").unwrap_err();
        assert_eq!(e, "the Java library implements copa and mdi, not `verus`");
        assert!(JavaScheme::parse("mdi@").is_err());
        assert!(JavaScheme::parse("mdi@cu:bic").is_err());
    }

    #[test]
    fn uploads_with_the_jar_after_setting_the_namespaces_default() {
        let jar = upload_jar(run().alcc).display().to_string();
        let k = JavaScheme::parse("mdi@reno").unwrap();
        let up = k.upload().unwrap();
        assert_eq!(
            up.server(&run()),
            "/src/target/release/alcc serve --receive --port 9000 --count 1 --seconds 22"
        );
        let c = up.client(&run());
        assert!(
            c.command.starts_with("{ echo reno > /proc/sys/net/ipv4/tcp_congestion_control"),
            "{}",
            c.command
        );
        assert!(c.command.contains("tcp_allowed_congestion_control"), "{}", c.command);
        assert!(
            c.command
                .ends_with(&format!("timeout 20 java -jar {jar} /dev/zero \"$ALCC_SERVER:9000\" --cc mdi")),
            "{}",
            c.command
        );
        assert_eq!(c.deadline_status, 124);
        assert_eq!(up.label(), "Java uploader (alcc-upload.jar): mdi above kernel reno (framed mode)");
        assert!(matches!(&up.needs()[..], [Need::Program { name: "java", .. }, Need::File { .. }]));
        // Downloading: the library's Send from the server side to alcc get.
        let server = k.server(&run());
        assert!(
            server.ends_with(&format!(
                "exec java -cp {jar} org.alcc.tools.Send --port 9000 --seconds 22 --cc mdi"
            )),
            "{server}"
        );
        assert!(k.client(&run()).command.contains("get \"$ALCC_SERVER:9000\" --mode framed"));
    }
}
