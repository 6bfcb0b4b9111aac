/**
 * Registrable domains whose hosts serve the content of many unrelated users (documents,
 * repositories, file shares, CDNs, link shorteners). Blocking one of these names at the
 * resolver would block the platform for everyone, so a name equal to or under an entry is
 * never blocked there. Shipped
 * with the agent as data; config `shared_domains` adds to it.
 */
export const SHARED_PLATFORMS: readonly string[] = [
  'google.com', 'googleusercontent.com', 'googleapis.com', 'gstatic.com', 'goo.gl', 'youtube.com',
  'githubusercontent.com', 'github.com', 'gitlab.com', 'bitbucket.org', 'microsoft.com', 'live.com',
  'office.com', 'office365.com', 'sharepoint.com', 'onedrive.com', '1drv.ms', 'azurewebsites.net',
  'windows.net', 'outlook.com', 'dropbox.com', 'dropboxusercontent.com', 'box.com', 'wetransfer.com',
  'mega.nz', 'amazonaws.com', 'cloudfront.net', 'akamaihd.net', 'cloudflare.com', 'workers.dev', 'pages.dev',
  'fastly.net', 'apple.com', 'icloud.com', 'facebook.com', 'fbcdn.net', 'instagram.com', 'whatsapp.com',
  'twitter.com', 'x.com', 't.co', 'linkedin.com', 'discord.com', 'discordapp.com', 'discordapp.net',
  'telegram.org', 't.me', 'slack.com', 'wordpress.com', 'wixsite.com', 'weebly.com', 'squarespace.com',
  'medium.com', 'notion.so', 'notion.site', 'pastebin.com', 'bit.ly', 'tinyurl.com', 'forms.gle',
  'typeform.com', 'surveymonkey.com', 'firebaseapp.com', 'web.app', 'herokuapp.com', 'netlify.app',
  'vercel.app', 'ngrok.io', 'ngrok-free.app',
];
